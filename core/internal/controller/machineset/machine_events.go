package machineset

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// machineChangesThatMatter passes the machine events a set acts on: creations,
// deletions, and updates of what a set reads. The Machine controller writes a
// machine's status many times on its way to Running (last operation,
// conditions copied from the node); without this filter each of those writes
// would sync the set once more, and the set's work grows with its size, so a
// scale-up of N machines would cost N² machine reads.
func machineChangesThatMatter() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, okOld := e.ObjectOld.(*v1alpha1.Machine)
			newM, okNew := e.ObjectNew.(*v1alpha1.Machine)
			if !okOld || !okNew {
				return true
			}
			return machineChangeMatters(oldM, newM)
		},
	}
}

// machineChangeMatters reports whether a set must look again after a machine
// changed from o to n: its metadata (labels for selection, annotations for
// priority and preservation, owner references, deletion), its spec (template
// propagation, the provider ID in the failed-machine summary), or the status
// fields that the set's counts, replacement and scale-down order read.
func machineChangeMatters(o, n *v1alpha1.Machine) bool {
	if o.Generation != n.Generation ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		!apiequality.Semantic.DeepEqual(o.Labels, n.Labels) ||
		!apiequality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
		!apiequality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences) {
		return true
	}
	oc, nc := &o.Status.CurrentStatus, &n.Status.CurrentStatus
	if oc.Phase != nc.Phase || !oc.LastUpdateTime.Equal(&nc.LastUpdateTime) ||
		!apiequality.Semantic.DeepEqual(oc.PreserveExpiryTime, nc.PreserveExpiryTime) {
		return true
	}
	// The last operation counts only through the failed-machine summary: a
	// change matters when it enters, leaves or changes a Failed state.
	ol, nl := &o.Status.LastOperation, &n.Status.LastOperation
	if ol.State == v1alpha1.MachineStateFailed || nl.State == v1alpha1.MachineStateFailed {
		return !apiequality.Semantic.DeepEqual(*ol, *nl)
	}
	return false
}
