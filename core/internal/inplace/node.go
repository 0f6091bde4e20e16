package inplace

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// Annotations of machina's target identity (docs/in-place-updates.md).
const (
	// DesiredAnnotation is what the node must become: for a
	// MachineDeployment rollout, the name of the new MachineSet.
	DesiredAnnotation = v1alpha1.AnnotationKeyNodeDesired
	// CurrentAnnotation is what the node last applied successfully,
	// written by the agent.
	CurrentAnnotation = v1alpha1.AnnotationKeyNodeCurrent
)

// preferNoSchedule is the taint on the nodes of old MachineSets while a
// rollout runs: new pods prefer nodes that will not be drained.
var preferNoSchedule = corev1.Taint{
	Key:    v1alpha1.PreferNoScheduleTaintKey,
	Value:  "True",
	Effect: corev1.TaintEffectPreferNoSchedule,
}

// MarkCandidate makes n a candidate of a rollout to desired: the label
// candidate-for-update, the annotation DesiredAnnotation and the
// PreferNoSchedule taint. It reports whether n changed.
//
// A node that had another target (a second template change before the
// first rollout finished with it), or whose agent reports success for
// another target (StaleResult), loses what belonged to that target: its
// update-result and failure reason, and its selection unless its update is
// under way (reason ReadyForUpdate, the agent is applying and reads the
// new target). A result for the old target must not count for the new one.
func MarkCandidate(n *corev1.Node, desired string) bool {
	changed := false
	if prev, ok := n.Annotations[DesiredAnnotation]; (ok && prev != desired) || StaleResult(n, desired) {
		changed = retarget(n)
	}
	changed = setLabel(n, v1alpha1.LabelKeyNodeCandidateForUpdate, labelTrue) || changed
	changed = setAnnotation(n, DesiredAnnotation, desired) || changed
	return addTaint(n, preferNoSchedule) || changed
}

// CandidateMarked tells whether n is marked as MarkCandidate would mark it
// for desired, without copying or changing n: MarkCandidate would change
// nothing.
func CandidateMarked(n *corev1.Node, desired string) bool {
	if !IsCandidate(n) || StaleResult(n, desired) {
		return false
	}
	if cur, ok := n.Annotations[DesiredAnnotation]; !ok || cur != desired {
		return false
	}
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == preferNoSchedule.Key && t.Effect == preferNoSchedule.Effect && t.Value == preferNoSchedule.Value
	})
}

// StaleResult tells whether n reports a successful update to another
// target than desired: the agent applied what it read at the go signal,
// and the target changed meanwhile. An agent that does not write
// CurrentAnnotation (MCM's) is taken at its word. A failed result is
// never stale: the agent leaves CurrentAnnotation at what it had.
func StaleResult(n *corev1.Node, desired string) bool {
	applied, ok := n.Annotations[CurrentAnnotation]
	return ok && applied != desired && Result(n) == v1alpha1.LabelValueNodeUpdateSuccessful
}

// retarget drops the result and failure reason of n's previous target, and
// its selection unless an update is under way.
func retarget(n *corev1.Node) bool {
	changed := false
	drop := []string{v1alpha1.LabelKeyNodeUpdateResult}
	if Reason(n) != v1alpha1.ReadyForUpdate {
		drop = append(drop, v1alpha1.LabelKeyNodeSelectedForUpdate)
	}
	for _, k := range drop {
		if _, ok := n.Labels[k]; ok {
			delete(n.Labels, k)
			changed = true
		}
	}
	if _, ok := n.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason]; ok {
		delete(n.Annotations, v1alpha1.AnnotationKeyMachineUpdateFailedReason)
		changed = true
	}
	return changed
}

// MarkSelected labels n selected-for-update. It reports whether n changed.
func MarkSelected(n *corev1.Node) bool {
	return setLabel(n, v1alpha1.LabelKeyNodeSelectedForUpdate, labelTrue)
}

// Clear takes a finished (or abandoned) rollout off n: the three labels,
// the failure reason, DesiredAnnotation and the PreferNoSchedule taint.
// CurrentAnnotation stays: it is the agent's record. It reports whether n
// changed.
func Clear(n *corev1.Node) bool {
	changed := false
	for _, k := range []string{v1alpha1.LabelKeyNodeCandidateForUpdate, v1alpha1.LabelKeyNodeSelectedForUpdate, v1alpha1.LabelKeyNodeUpdateResult} {
		if _, ok := n.Labels[k]; ok {
			delete(n.Labels, k)
			changed = true
		}
	}
	for _, k := range []string{v1alpha1.AnnotationKeyMachineUpdateFailedReason, DesiredAnnotation} {
		if _, ok := n.Annotations[k]; ok {
			delete(n.Annotations, k)
			changed = true
		}
	}
	return removeTaint(n, preferNoSchedule.Key) || changed
}

// Uncordon makes n schedulable again. It reports whether n changed.
func Uncordon(n *corev1.Node) bool {
	if !n.Spec.Unschedulable {
		return false
	}
	n.Spec.Unschedulable = false
	return true
}

// HasRolloutMarks tells whether n carries anything MarkCandidate or an
// agent's result put there, that Clear would remove.
func HasRolloutMarks(n *corev1.Node) bool {
	for _, k := range []string{v1alpha1.LabelKeyNodeCandidateForUpdate, v1alpha1.LabelKeyNodeSelectedForUpdate, v1alpha1.LabelKeyNodeUpdateResult} {
		if _, ok := n.Labels[k]; ok {
			return true
		}
	}
	for _, k := range []string{v1alpha1.AnnotationKeyMachineUpdateFailedReason, DesiredAnnotation} {
		if _, ok := n.Annotations[k]; ok {
			return true
		}
	}
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == preferNoSchedule.Key })
}

// Patch writes the changes from before to after with one merge patch of
// the Node's metadata and spec. A change of the taints replaces the whole
// list, so it is sent with the resource version: a conflict (someone else
// changed the taints meanwhile) is retried by the caller's next reconcile
// instead of dropping their taint. Nothing changed, nothing written.
func Patch(ctx context.Context, c client.Client, before, after *corev1.Node) error {
	if equality.Semantic.DeepEqual(before.ObjectMeta, after.ObjectMeta) && equality.Semantic.DeepEqual(before.Spec, after.Spec) {
		return nil
	}
	var opts []client.MergeFromOption
	if !equality.Semantic.DeepEqual(before.Spec.Taints, after.Spec.Taints) {
		opts = append(opts, client.MergeFromWithOptimisticLock{})
	}
	if err := c.Patch(ctx, after, client.MergeFromWithOptions(before, opts...)); err != nil {
		return fmt.Errorf("patching node %s: %w", after.Name, err)
	}
	return nil
}

// PatchStatus writes the InPlaceUpdate condition of after with a strategic
// merge patch of the Node's status: conditions merge by type, so the
// kubelet's own conditions are neither sent nor overwritten.
func PatchStatus(ctx context.Context, c client.Client, before, after *corev1.Node) error {
	if equality.Semantic.DeepEqual(before.Status.Conditions, after.Status.Conditions) {
		return nil
	}
	if err := c.Status().Patch(ctx, after, client.StrategicMergeFrom(before)); err != nil {
		return fmt.Errorf("writing the %s condition of node %s: %w", v1alpha1.NodeInPlaceUpdate, after.Name, err)
	}
	return nil
}

func setLabel(n *corev1.Node, k, v string) bool {
	if cur, ok := n.Labels[k]; ok && cur == v {
		return false
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels[k] = v
	return true
}

func setAnnotation(n *corev1.Node, k, v string) bool {
	if cur, ok := n.Annotations[k]; ok && cur == v {
		return false
	}
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[k] = v
	return true
}

func addTaint(n *corev1.Node, t corev1.Taint) bool {
	for i, cur := range n.Spec.Taints {
		if cur.Key == t.Key && cur.Effect == t.Effect {
			if cur.Value == t.Value {
				return false
			}
			n.Spec.Taints[i].Value = t.Value
			return true
		}
	}
	n.Spec.Taints = append(n.Spec.Taints, t)
	return true
}

func removeTaint(n *corev1.Node, key string) bool {
	before := len(n.Spec.Taints)
	n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
	return len(n.Spec.Taints) != before
}
