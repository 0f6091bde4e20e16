package mckubelet

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// poolSpecOrLabelsChanged passes pool updates that change which
// KubeletConfigs select the pool (labels) or which MachineConfigs it
// selects; its status and the render controller's spec.configuration do
// not matter here.
func poolSpecOrLabelsChanged() predicate.TypedPredicate[*mcfgv1.MachineConfigPool] {
	return predicate.TypedFuncs[*mcfgv1.MachineConfigPool]{
		UpdateFunc: func(e event.TypedUpdateEvent[*mcfgv1.MachineConfigPool]) bool {
			return !equality.Semantic.DeepEqual(e.ObjectOld.Spec.MachineConfigSelector, e.ObjectNew.Spec.MachineConfigSelector) ||
				!maps.Equal(e.ObjectOld.Labels, e.ObjectNew.Labels)
		},
	}
}
