package machineset

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
)

// reasonDisruptionHeld is the event of a scale-down that keeps machines
// whose nodes ask not to be disrupted.
const reasonDisruptionHeld = "DisruptionHeld"

// spareHeld keeps the scale-down off nodes that ask not to be disrupted
// (machina.io/do-not-disrupt or karpenter.sh/do-not-disrupt on the Node
// or on a pod on it, core/disruption): a scale-down is a voluntary
// disruption, whether a rolling update, a Recreate or a smaller replicas
// count asked for it. The set takes the next machine in deletion order
// instead; when none is left, it keeps the surplus, says so in an event,
// and looks again after disruption.Recheck. A machine someone chose by
// name (machinepriority=1, as the cluster-autoscaler and the node
// trigger-deletion annotation mark it, or marked for deletion) goes as
// chosen: whoever chose it answers for it, as for a Machine deleted by
// hand. Without a target cluster (Pods nil) nothing is checked.
func (r *Reconciler) spareHeld(ctx context.Context, ms *v1alpha1.MachineSet, p *plan) error {
	if r.Pods == nil || r.Target == nil || len(p.scaleDown) == 0 {
		return nil
	}
	want := len(p.scaleDown)
	var known map[string]string // machine name -> why, when looked up at once
	if want > holdAllAbove {
		var err error
		if known, err = r.holdsOf(ctx, p.candidates); err != nil {
			return err
		}
	}
	picked, held, err := disruption.Pick(p.candidates, func(m *v1alpha1.Machine) (string, error) {
		switch {
		case chosenByName(m):
			return "", nil
		case known != nil:
			return known[m.Name], nil
		}
		return disruption.MachineHold(ctx, r.Target, r.Pods, m)
	}, int32(want))
	if err != nil {
		return err
	}
	p.scaleDown, p.held, p.short = picked, held, want-len(picked)
	if len(held) == 0 {
		return nil
	}
	log := ctrl.LoggerFrom(ctx)
	if p.short == 0 {
		log.V(1).Info("Scale-down passed over machines whose nodes ask not to be disrupted", "held", held)
		return nil
	}
	log.Info("Scale-down waits for nodes that ask not to be disrupted", "keeping", p.short, "held", held)
	r.Recorder.Eventf(ms, nil, corev1.EventTypeNormal, reasonDisruptionHeld, "ScaleDown",
		"Keeping %d surplus machine(s) for now: %s", p.short, strings.Join(held, "; "))
	return nil
}

// holdAllAbove is the scale-down beyond which the holds of every candidate
// are looked up with one list of the cluster's pods (disruption.HoldAll)
// rather than one list per node as the victims are picked.
const holdAllAbove = 16

// holdsOf is why each of machines' nodes may not be disrupted, by machine
// name, from one list of pods.
func (r *Reconciler) holdsOf(ctx context.Context, machines []*v1alpha1.Machine) (map[string]string, error) {
	var nodes []*corev1.Node
	machineOf := map[string]string{}
	for _, m := range machines {
		node, err := disruption.MachineNode(ctx, r.Target, m)
		if err != nil {
			return nil, err
		}
		if node != nil {
			nodes = append(nodes, node)
			machineOf[node.Name] = m.Name
		}
	}
	byNode, err := disruption.HoldAll(ctx, r.Pods, nodes)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(byNode))
	for node, why := range byNode {
		out[machineOf[node]] = "machine " + machineOf[node] + ": " + why
	}
	return out, nil
}

// chosenByName reports whether a person or a controller picked m to go:
// the lowest deletion priority, or a deletion mark.
func chosenByName(m *v1alpha1.Machine) bool {
	return m.Annotations[v1alpha1.MachinePriorityAnnotation] == v1alpha1.TriggeredForDeletionPriority ||
		m.Annotations[v1alpha1.MarkedForDeletionTimeAnnotation] != ""
}
