package mcpool

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/inplace"
	"github.com/machina-io/machina/core/internal/mcfg"
)

// members finds the pool's Nodes. Every pool's choice is computed, so
// that a Node several pools choose goes to one of them by MCO's rule
// (mcfg.PrimaryPool): the master pool over any other, a custom pool over
// worker. The other pools neither count nor drive it. A Node two custom
// pools choose is driven by none of them (no tug of war between two
// configurations), and every pool that chooses it names it in its
// Degraded condition.
func (r *Reconciler) members(ctx context.Context, s *scope) (phase.Result, error) {
	pools := &mcv1.MachineConfigPoolList{}
	if err := r.Target.List(ctx, pools); err != nil {
		return phase.Result{}, fmt.Errorf("listing pools: %w", err)
	}
	// Every pool syncs on every Node that changes labels or handshake, and
	// reads them all: without copies (they are only read; setDesired
	// copies the node it writes).
	nodes := &corev1.NodeList{}
	if err := r.Target.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return phase.Result{}, fmt.Errorf("listing nodes: %w", err)
	}
	driven, conflicts, why, err := mcfg.DrivenNodes(ctx, r.Control, pools.Items, s.pool, nodes.Items)
	if err != nil {
		return phase.Result{}, err
	}
	s.invalid = why
	if s.invalid != "" {
		s.log.Info("Pool selects no nodes", "reason", s.invalid)
	}
	byName := map[string]*corev1.Node{}
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	s.shared = conflicts
	for _, name := range driven {
		s.members = append(s.members, newPoolNode(byName[name]))
	}
	return phase.Result{}, nil
}

// sharedMessage names the Nodes that two custom pools choose.
func sharedMessage(shared map[string][]string) string {
	names := make([]string, 0, len(shared))
	for n := range shared {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("node %s is also in pool %s", n, strings.Join(shared[n], ", ")))
	}
	return strings.Join(parts, "; ") + "; a node in two custom pools (pools other than master and worker) is updated by none of them"
}

// inInPlaceRollout reports a Node that a MachineDeployment's in-place
// rollout has marked: the pool leaves it alone until the marks are gone.
func inInPlaceRollout(n *corev1.Node) bool {
	return inplace.IsCandidate(n) || inplace.IsSelected(n)
}
