package mcdrain

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/drainorder"
)

// drainRules are the MachineDrainRules that select the Machine of the Node
// (the Machine labelled node=<name>); none when no Machine has the Node or
// the kind is not served. The error names a rule whose selector does not
// parse: the drain stops there rather than evict what it meant to keep.
func (r *Reconciler) drainRules(ctx context.Context, nodeName string) (*drainorder.Rules, error) {
	var machines v1alpha1.MachineList
	if err := r.Control.List(ctx, &machines, client.MatchingLabels{v1alpha1.NodeLabelKey: nodeName}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("finding the machine of node %s: %w", nodeName, err)
	}
	if len(machines.Items) == 0 {
		return nil, nil
	}
	m := &machines.Items[0]
	var list machinaio.MachineDrainRuleList
	if err := r.Control.List(ctx, &list, client.InNamespace(m.Namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing the MachineDrainRules of namespace %s: %w", m.Namespace, err)
	}
	return drainorder.ForMachine(list.Items, m.Labels)
}
