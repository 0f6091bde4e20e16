package machinedeployment

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/inplace"
)

// preferNoScheduleTaint is the taint on the nodes of old machine sets during
// a rolling update.
var preferNoScheduleTaint = corev1.Taint{Key: v1alpha1.PreferNoScheduleTaintKey, Value: "True", Effect: corev1.TaintEffectPreferNoSchedule}

// syncRolloutNodes keeps the nodes of a rolling deployment (in the target
// cluster) marked for the rollout:
//   - nodes of old machine sets carry a PreferNoSchedule taint, so that
//     workloads move to new nodes rather than to nodes about to be drained;
//     nodes of the new set never carry it (it is removed if a rollback made an
//     old set new again);
//   - while old machines exist, every node of the deployment carries the
//     cluster-autoscaler's scale-down-disabled annotation (if enabled), so the
//     autoscaler does not remove nodes in the middle of a rollout; once no old
//     machine is left, the annotation is removed from the nodes where this
//     controller set it.
//
// Without a target cluster there are no nodes and nothing to do.
func (r *Reconciler) syncRolloutNodes(ctx context.Context, s *scope) error {
	if r.Target == nil {
		return nil
	}
	rollingOut := s.oldMachinesLeft()
	for _, ms := range s.sets {
		isNew := s.new != nil && ms.UID == s.new.UID
		for _, m := range s.machines[ms.UID] {
			node := m.Labels[v1alpha1.NodeLabelKey]
			if node == "" {
				continue
			}
			err := r.updateNode(ctx, node, func(n *corev1.Node) bool {
				changed := false
				if isNew && !inplace.IsCandidate(n) {
					// A candidate of the new set is stale (rolled back while
					// updated to another template): it is drained next, and
					// keeps the taint until its update is done.
					changed = removeTaint(n, preferNoScheduleTaint) || changed
				} else if !isNew && m.DeletionTimestamp == nil {
					changed = addTaint(n, preferNoScheduleTaint) || changed
				}
				if rollingOut && r.Options.AutoscalerScaleDownAnnotationDuringRollout {
					changed = setScaleDownDisabled(n) || changed
				} else {
					changed = clearScaleDownDisabled(n) || changed
				}
				return changed
			})
			var conflict errNodeConflict
			if errors.As(err, &conflict) {
				// The other nodes and the rollout step go on; this node is
				// marked on the next sync.
				ctrl.LoggerFrom(ctx).V(1).Info("Node changed while being marked; retrying soon", "node", conflict.name)
				s.retryNodes = true
				continue
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// updateNode reads a node, applies change, and patches the node if change
// reports a difference. The node is read from the cache without a copy and
// change is first tried on a probe holding only the node's taints and
// annotations (all it touches): a deployment syncs often and has many nodes,
// and most syncs change none of them, so a full copy per node per sync was a
// large share of the controller's CPU. Only a node that needs a change is
// copied and patched. A patch that changes the taints carries the
// resourceVersion, because a merge patch replaces the whole taint list and
// must not overwrite a concurrent change (by the kubelet or the node
// controller); on a conflict the sync is retried soon (errNodeConflict: the
// deployment does not watch nodes, so no event would bring it back). A patch
// of annotations alone merges key by key and needs no lock, so a node's
// heartbeats cannot make it fail. A missing node is skipped.
func (r *Reconciler) updateNode(ctx context.Context, name string, change func(*corev1.Node) bool) error {
	cached := &corev1.Node{}
	if err := r.Target.Get(ctx, client.ObjectKey{Name: name}, cached, client.UnsafeDisableDeepCopy); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading node %s: %w", name, err)
	}
	if !change(nodeProbe(cached)) {
		return nil
	}
	orig := cached.DeepCopy()
	n := orig.DeepCopy()
	change(n)
	patch := client.MergeFrom(orig)
	if !apiequality.Semantic.DeepEqual(orig.Spec.Taints, n.Spec.Taints) {
		patch = client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	}
	err := r.Target.Patch(ctx, n, patch)
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		return errNodeConflict{name: name}
	default:
		return fmt.Errorf("updating node %s: %w", name, err)
	}
}

// errNodeConflict reports that a node changed between the cache read and the
// patch. It is deliberately not an API conflict error: Reconcile takes those
// as "the newer version's event will sync again", which does not hold for
// nodes; syncRolloutNodes notes it in the scope and the sync runs again after
// nodeConflictRetry.
type errNodeConflict struct{ name string }

func (e errNodeConflict) Error() string {
	return fmt.Sprintf("node %s changed while being marked for the rollout", e.name)
}

// nodeConflictRetry is how soon a sync whose node patch met a conflict runs
// again, by which time the cache holds the newer node.
const nodeConflictRetry = time.Second

// nodeProbe returns a node with copies of n's taints and annotations, its
// labels (shared, only read) and nothing else, for trying a change without
// touching n, which may be the cache's own object.
func nodeProbe(n *corev1.Node) *corev1.Node {
	p := &corev1.Node{}
	p.Labels = n.Labels // read only: the in-place candidate label
	p.Annotations = maps.Clone(n.Annotations)
	p.Spec.Taints = slices.Clone(n.Spec.Taints)
	return p
}

func addTaint(n *corev1.Node, t corev1.Taint) bool {
	for i := range n.Spec.Taints {
		cur := &n.Spec.Taints[i]
		if cur.Key == t.Key && cur.Effect == t.Effect {
			if cur.Value == t.Value {
				return false
			}
			cur.Value = t.Value
			return true
		}
	}
	n.Spec.Taints = append(n.Spec.Taints, t)
	return true
}

func removeTaint(n *corev1.Node, t corev1.Taint) bool {
	var out []corev1.Taint
	for _, cur := range n.Spec.Taints {
		if cur.Key == t.Key && cur.Effect == t.Effect {
			continue
		}
		out = append(out, cur)
	}
	if len(out) == len(n.Spec.Taints) {
		return false
	}
	n.Spec.Taints = out
	return true
}

// setScaleDownDisabled adds the autoscaler annotation and our marker. A
// user's own scale-down-disabled annotation is left as it is and not marked,
// so that it survives the end of the rollout.
func setScaleDownDisabled(n *corev1.Node) bool {
	if _, userSet := n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation]; userSet && n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation] != "true" {
		return false
	}
	if n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation] == "true" && n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation] == "true" {
		return false
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation] = "true"
	n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation] = "true"
	return true
}

// clearScaleDownDisabled removes the autoscaler annotation where we set it.
func clearScaleDownDisabled(n *corev1.Node) bool {
	if n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation] != "true" {
		return false
	}
	delete(n.Annotations, v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation)
	delete(n.Annotations, v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation)
	return true
}
