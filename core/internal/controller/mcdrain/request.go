package mcdrain

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// unasked says why a drain or uncordon request is none of a rollout's, or
// "" when it is. A pool's rollout asks for a Node's update by writing its
// desiredConfig, which only the manager writes
// (deploy/node-agent/own-node-policy.yaml keeps it from the agents), and
// the agent asks for <verb><desiredConfig>. A request on a Node no pool
// gave a configuration, or for another configuration than the one it was
// given, is acted on by no one: acting on it would let whoever writes
// desiredDrain cordon and drain a Node no rollout asked for. (The agent of
// a Node may still ask for a drain of its own Node for its desiredConfig,
// also when it runs that configuration already: that is how it re-applies
// after a failure. It is root on that Node anyway.)
func unasked(node *corev1.Node, want string) string {
	desired := node.Annotations[mcv1.DesiredConfigAnnotation]
	config, ok := strings.CutPrefix(want, mcv1.DrainRequestPrefix)
	if !ok {
		config, ok = strings.CutPrefix(want, mcv1.UncordonRequestPrefix)
	}
	switch {
	case !ok:
		return "" // Reconcile says what is wrong with it
	case desired == "":
		return "the node has no " + mcv1.DesiredConfigAnnotation + ": no pool is updating it"
	case config != desired:
		return fmt.Sprintf("it names %q, but the node's %s is %q", config, mcv1.DesiredConfigAnnotation, desired)
	}
	return ""
}

// ack writes lastAppliedDrain=want, with what also changes (if any) in the
// same merge patch.
func (r *Reconciler) ack(ctx context.Context, node *corev1.Node, want string, also ...func(*corev1.Node)) error {
	patched := node.DeepCopy()
	for _, change := range also {
		change(patched)
	}
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[mcv1.LastAppliedDrainAnnotation] = want
	if err := r.Target.Patch(ctx, patched, client.MergeFrom(node)); err != nil {
		return fmt.Errorf("acknowledging %s on node %s: %w", want, node.Name, err)
	}
	return nil
}
