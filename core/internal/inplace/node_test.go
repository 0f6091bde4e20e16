package inplace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func TestMarkAndClear(t *testing.T) {
	userTaint := corev1.Taint{Key: "user", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"keep": "1"}, Annotations: map[string]string{CurrentAnnotation: "web-1"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{userTaint}},
	}
	assert.False(t, HasRolloutMarks(n))
	assert.True(t, MarkCandidate(n, "web-2"))
	assert.False(t, MarkCandidate(n, "web-2"), "marking twice changes nothing")
	assert.True(t, MarkCandidate(n, "web-3"), "a new target is written")
	assert.Equal(t, "web-3", n.Annotations[DesiredAnnotation])
	assert.Equal(t, "true", n.Labels[v1alpha1.LabelKeyNodeCandidateForUpdate])
	assert.Contains(t, n.Spec.Taints, corev1.Taint{Key: v1alpha1.PreferNoScheduleTaintKey, Value: "True", Effect: corev1.TaintEffectPreferNoSchedule})
	assert.True(t, MarkSelected(n))
	assert.False(t, MarkSelected(n))
	n.Labels[v1alpha1.LabelKeyNodeUpdateResult] = v1alpha1.LabelValueNodeUpdateFailed
	n.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason] = "disk full"
	n.Spec.Unschedulable = true
	assert.True(t, HasRolloutMarks(n))

	assert.True(t, Clear(n))
	assert.False(t, Clear(n))
	assert.Equal(t, map[string]string{"keep": "1"}, n.Labels)
	assert.Equal(t, map[string]string{CurrentAnnotation: "web-1"}, n.Annotations, "the agent's record stays")
	assert.Equal(t, []corev1.Taint{userTaint}, n.Spec.Taints)
	assert.True(t, n.Spec.Unschedulable, "Clear does not uncordon")
	assert.True(t, Uncordon(n))
	assert.False(t, Uncordon(n))
}

// A second template change: what the node reported for the first target
// does not count for the second.
func TestMarkCandidateRetarget(t *testing.T) {
	n := &corev1.Node{}
	MarkCandidate(n, "web-2")
	MarkSelected(n)
	SetCondition(n, v1alpha1.UpdateSuccessful, "", time.Unix(0, 0))
	n.Labels[v1alpha1.LabelKeyNodeUpdateResult] = v1alpha1.LabelValueNodeUpdateSuccessful
	assert.True(t, MarkCandidate(n, "web-3"))
	assert.NotContains(t, n.Labels, v1alpha1.LabelKeyNodeUpdateResult)
	assert.NotContains(t, n.Labels, v1alpha1.LabelKeyNodeSelectedForUpdate, "selected for the old target")
	assert.Equal(t, v1alpha1.CandidateForUpdate, NextReason(n), "starts over")

	// Under way: the selection stays; the agent reads the new target.
	u := &corev1.Node{}
	MarkCandidate(u, "web-2")
	MarkSelected(u)
	SetCondition(u, v1alpha1.ReadyForUpdate, "", time.Unix(0, 0))
	assert.False(t, MarkCandidate(u, "web-2"))
	assert.True(t, MarkCandidate(u, "web-3"))
	assert.True(t, IsSelected(u))
	assert.Equal(t, "web-3", u.Annotations[DesiredAnnotation])
}

func TestTimeout(t *testing.T) {
	m := &v1alpha1.Machine{}
	assert.Equal(t, DefaultTimeout, Timeout(m, DefaultTimeout))
	m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineInPlaceUpdateTimeout: &v1alpha1.Duration{Duration: time.Minute}}
	assert.Equal(t, time.Minute, Timeout(m, DefaultTimeout), "the machine's value wins")

	t0 := time.Unix(1000, 0)
	exp, left := Expired(t0, time.Minute, t0.Add(30*time.Second))
	assert.False(t, exp)
	assert.Equal(t, 30*time.Second, left)
	exp, left = Expired(t0, time.Minute, t0.Add(time.Minute))
	assert.True(t, exp)
	assert.Zero(t, left)
}

// The agent applied the target it read at the go signal, and the target
// changed meanwhile (a retarget, or a rollback): its success is for the
// other target and does not count. A failure, or an agent that writes no
// CurrentAnnotation, is taken as it is.
func TestStaleResult(t *testing.T) {
	n := &corev1.Node{}
	MarkCandidate(n, "web-3")
	MarkSelected(n)
	SetCondition(n, v1alpha1.ReadyForUpdate, "", time.Unix(0, 0))
	n.Labels[v1alpha1.LabelKeyNodeUpdateResult] = v1alpha1.LabelValueNodeUpdateSuccessful
	assert.False(t, StaleResult(n, "web-3"), "no CurrentAnnotation: taken at its word")
	n.Annotations[CurrentAnnotation] = "web-3"
	assert.False(t, StaleResult(n, "web-3"))
	n.Annotations[CurrentAnnotation] = "web-2"
	assert.True(t, StaleResult(n, "web-3"))
	assert.True(t, MarkCandidate(n, "web-3"), "the stale result is dropped")
	assert.NotContains(t, n.Labels, v1alpha1.LabelKeyNodeUpdateResult)
	assert.True(t, IsSelected(n), "the go signal stands: the agent applies web-3 next")
	assert.False(t, MarkCandidate(n, "web-3"))

	n.Labels[v1alpha1.LabelKeyNodeUpdateResult] = v1alpha1.LabelValueNodeUpdateFailed
	assert.False(t, StaleResult(n, "web-3"), "a failure keeps the last applied target")
}

// CandidateMarked says exactly when MarkCandidate would change nothing:
// the rollout skips the copy and the patch of such a node.
func TestCandidateMarked(t *testing.T) {
	marked := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	MarkCandidate(marked, "set-b")
	stale := marked.DeepCopy()
	stale.Labels[v1alpha1.LabelKeyNodeUpdateResult] = v1alpha1.LabelValueNodeUpdateSuccessful
	stale.Annotations[CurrentAnnotation] = "set-a"
	otherTaint := marked.DeepCopy()
	otherTaint.Spec.Taints[0].Value = "False"
	cases := map[string]struct {
		n       *corev1.Node
		desired string
	}{
		"fresh node":                 {&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, "set-b"},
		"marked":                     {marked, "set-b"},
		"marked for another target":  {marked, "set-c"},
		"stale result":               {stale, "set-b"},
		"the taint with other value": {otherTaint, "set-b"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			changed := MarkCandidate(c.n.DeepCopy(), c.desired)
			assert.Equal(t, !changed, CandidateMarked(c.n, c.desired))
		})
	}
	assert.True(t, CandidateMarked(marked, "set-b"))
}
