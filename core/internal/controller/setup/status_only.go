package setup

import (
	"slices"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// NotOnlyStatus passes every event but an update that changed nothing
// but the object's status (and its resource version and managed fields):
// for a controller's own object, its own status write. Without it each
// status write syncs the object again at once; a parent whose children
// keep changing (a MachineSet in a scale-up) then finds new counts, writes
// them, and syncs again, in a loop as fast as the API server answers that
// walks all its children each time, past any throttle of their events.
// The object must have a status subresource, so that its generation counts
// spec changes; labels, annotations, finalizers, owners and the deletion
// timestamp are compared as well (controller-runtime's generation, label and
// annotation predicates, and the rest here). Only for a controller that never needs
// the sync after its own status write: one that acts on the status it
// wrote last (the MachineDeployment cleans up old sets once its status
// says complete) needs that sync.
func NotOnlyStatus() predicate.Predicate {
	return predicate.Or[client.Object](
		predicate.GenerationChangedPredicate{},
		predicate.LabelChangedPredicate{},
		predicate.AnnotationChangedPredicate{},
		predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o == nil || n == nil ||
				!slices.Equal(o.GetFinalizers(), n.GetFinalizers()) ||
				!apiequality.Semantic.DeepEqual(o.GetOwnerReferences(), n.GetOwnerReferences()) ||
				!o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp())
		}},
	)
}
