package machinedeployment

import (
	"context"
	"errors"
	"fmt"
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
	return r.syncRolloutNodesWith(ctx, s, nil, nil)
}

// syncRolloutNodesWith is syncRolloutNodes with more marks for the nodes of
// some machines: extra returns the change to make on a machine's node in
// the same patch (nil for none); the nodes in skip are left for a later
// pass of the same sync (markDeferred). An in-place rollout marks its candidates
// so: one write per node instead of one for the rollout's marks and one for
// the candidate's, the second of which would start from the cache's copy
// without the first and lose on the taints' resource version.
func (r *Reconciler) syncRolloutNodesWith(ctx context.Context, s *scope, extra func(*v1alpha1.Machine) *nodeChange, skip map[string]bool) error {
	if r.Target == nil {
		return nil
	}
	rollingOut := s.oldMachinesLeft()
	type job struct {
		node   string
		want   rolloutMarks
		change *nodeChange
	}
	var jobs []job
	for _, ms := range s.sets {
		isNew := s.new != nil && ms.UID == s.new.UID
		for _, m := range s.machines[ms.UID] {
			node := m.Labels[v1alpha1.NodeLabelKey]
			if node == "" || skip[node] {
				continue
			}
			want := rolloutMarks{scaleDownDisabled: rollingOut && r.Options.AutoscalerScaleDownAnnotationDuringRollout}
			switch {
			case isNew:
				// A candidate of the new set is stale (rolled back while
				// updated to another template): it is drained next, and
				// keeps the taint until its update is done.
				want.untaint = true
			case m.DeletionTimestamp == nil:
				want.taint = true
			}
			j := job{node: node, want: want}
			if extra != nil {
				j.change = extra(m)
			}
			jobs = append(jobs, j)
		}
	}
	// Most syncs write none of them; a rollout's first writes them all,
	// together (inParallel).
	return inParallel(len(jobs), func(i int) error {
		err := r.markNode(ctx, s, jobs[i].node, jobs[i].want, jobs[i].change)
		var conflict errNodeConflict
		if errors.As(err, &conflict) {
			// The other nodes and the rollout step go on; this node is
			// marked on the next sync.
			ctrl.LoggerFrom(ctx).V(1).Info("Node changed while being marked; retrying soon", "node", conflict.name)
			s.noteNodeConflict()
			return nil
		}
		return err
	})
}

// rolloutMarks is what a rollout wants on one node: the PreferNoSchedule
// taint added (taint) or removed (untaint), or left as it is; the
// autoscaler's scale-down-disabled annotation set where we may, or removed
// where we set it.
type rolloutMarks struct {
	taint, untaint    bool
	scaleDownDisabled bool
}

// missing reports whether n lacks a mark, without changing n: a deployment
// syncs often and has many nodes, and most syncs change none of them, so
// the check reads the cache's node as it is and copies nothing.
func (w rolloutMarks) missing(n *corev1.Node) bool {
	hasTaint, sameValue := taintOn(n, preferNoScheduleTaint)
	switch {
	case w.untaint && hasTaint && !inplace.IsCandidate(n),
		w.taint && (!hasTaint || !sameValue),
		w.scaleDownDisabled && needsScaleDownDisabled(n),
		!w.scaleDownDisabled && setByUs(n):
		return true
	}
	return false
}

// apply puts the marks on n.
func (w rolloutMarks) apply(n *corev1.Node) {
	if w.untaint && !inplace.IsCandidate(n) {
		removeTaint(n, preferNoScheduleTaint)
	}
	if w.taint {
		addTaint(n, preferNoScheduleTaint)
	}
	if w.scaleDownDisabled {
		setScaleDownDisabled(n)
	} else {
		clearScaleDownDisabled(n)
	}
}

// nodeChange is a change of a node beyond the rollout's marks: done says,
// without copying the node, that it is there already; apply makes it.
type nodeChange struct {
	done  func(*corev1.Node) bool
	apply func(*corev1.Node) bool
}

// markNode puts the marks on a node that misses one, with change (if not
// nil) in the same patch. The node is read from the cache without a copy
// (or is the one this sync wrote: s.writtenNode); only a node that needs a
// change is copied and patched. A patch that changes the taints carries the
// resourceVersion, because a merge patch replaces the whole taint list and
// must not overwrite a concurrent change (by the kubelet or the node
// controller); on a conflict the sync is retried soon (errNodeConflict: the
// deployment does not watch nodes, so no event would bring it back). A
// patch of annotations alone merges key by key and needs no lock, so a
// node's heartbeats cannot make it fail. A missing node is skipped. The
// written node is kept in the scope for the rest of the sync.
func (r *Reconciler) markNode(ctx context.Context, s *scope, name string, want rolloutMarks, change *nodeChange) error {
	cached := s.writtenNode(name)
	if cached == nil {
		cached = &corev1.Node{}
		if err := r.Target.Get(ctx, client.ObjectKey{Name: name}, cached, client.UnsafeDisableDeepCopy); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("reading node %s: %w", name, err)
		}
	}
	if !want.missing(cached) && (change == nil || change.done(cached)) {
		return nil
	}
	orig := cached.DeepCopy()
	n := orig.DeepCopy()
	want.apply(n)
	if change != nil {
		change.apply(n)
	}
	if apiequality.Semantic.DeepEqual(orig.ObjectMeta, n.ObjectMeta) && apiequality.Semantic.DeepEqual(orig.Spec, n.Spec) {
		return nil
	}
	patch := client.MergeFrom(orig)
	if !apiequality.Semantic.DeepEqual(orig.Spec.Taints, n.Spec.Taints) {
		patch = client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	}
	err := r.Target.Patch(ctx, n, patch)
	switch {
	case err == nil:
		s.noteNodeWritten(n)
		return nil
	case apierrors.IsNotFound(err):
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

// taintOn reports whether n carries a taint of t's key and effect, and
// whether with t's value.
func taintOn(n *corev1.Node, t corev1.Taint) (has, sameValue bool) {
	for _, cur := range n.Spec.Taints {
		if cur.Key == t.Key && cur.Effect == t.Effect {
			return true, cur.Value == t.Value
		}
	}
	return false, false
}

// addTaint sets t on n, or its value where n has t's key and effect.
func addTaint(n *corev1.Node, t corev1.Taint) {
	for i := range n.Spec.Taints {
		if cur := &n.Spec.Taints[i]; cur.Key == t.Key && cur.Effect == t.Effect {
			cur.Value = t.Value
			return
		}
	}
	n.Spec.Taints = append(n.Spec.Taints, t)
}

// removeTaint removes the taints of t's key and effect from n.
func removeTaint(n *corev1.Node, t corev1.Taint) {
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(cur corev1.Taint) bool {
		return cur.Key == t.Key && cur.Effect == t.Effect
	})
}

// needsScaleDownDisabled reports whether the autoscaler annotation and our
// marker are to be set on n. A user's own scale-down-disabled annotation is
// left as it is and not marked, so that it survives the end of the rollout.
func needsScaleDownDisabled(n *corev1.Node) bool {
	if _, userSet := n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation]; userSet && !setByUs(n) {
		return false
	}
	return n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation] != "true" || !setByUs(n)
}

// setByUs reports whether the autoscaler annotation on n is ours to remove.
func setByUs(n *corev1.Node) bool {
	return n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation] == "true"
}

// setScaleDownDisabled adds the autoscaler annotation and our marker where
// needsScaleDownDisabled says so.
func setScaleDownDisabled(n *corev1.Node) {
	if !needsScaleDownDisabled(n) {
		return
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation] = "true"
	n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation] = "true"
}

// clearScaleDownDisabled removes the autoscaler annotation where we set it.
func clearScaleDownDisabled(n *corev1.Node) {
	if !setByUs(n) {
		return
	}
	delete(n.Annotations, v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation)
	delete(n.Annotations, v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation)
}
