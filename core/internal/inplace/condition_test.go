package inplace

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func nodeWith(reason string, labels ...string) *corev1.Node {
	n := &corev1.Node{}
	n.Labels = map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		n.Labels[labels[i]] = labels[i+1]
	}
	if reason != "" {
		SetCondition(n, reason, "", time.Unix(0, 0))
	}
	return n
}

const (
	cand = v1alpha1.LabelKeyNodeCandidateForUpdate
	sel  = v1alpha1.LabelKeyNodeSelectedForUpdate
	res  = v1alpha1.LabelKeyNodeUpdateResult
	ok   = v1alpha1.LabelValueNodeUpdateSuccessful
	bad  = v1alpha1.LabelValueNodeUpdateFailed
)

func TestNextReason(t *testing.T) {
	cases := []struct {
		name string
		node *corev1.Node
		want string
	}{
		{"no labels, no condition", nodeWith(""), ""},
		{"candidate", nodeWith("", cand, "true"), v1alpha1.CandidateForUpdate},
		{"candidate again", nodeWith(v1alpha1.CandidateForUpdate, cand, "true"), ""},
		{"candidate and selected at once", nodeWith("", cand, "true", sel, "true"), v1alpha1.SelectedForUpdate},
		{"selected", nodeWith(v1alpha1.CandidateForUpdate, cand, "true", sel, "true"), v1alpha1.SelectedForUpdate},
		{"selected without candidate waits", nodeWith("", sel, "true"), ""},
		{"selected, the drain is the caller's", nodeWith(v1alpha1.SelectedForUpdate, cand, "true", sel, "true"), ""},
		{"ready, no result yet", nodeWith(v1alpha1.ReadyForUpdate, cand, "true", sel, "true"), ""},
		{"ready, successful", nodeWith(v1alpha1.ReadyForUpdate, cand, "true", sel, "true", res, ok), v1alpha1.UpdateSuccessful},
		{"ready, failed", nodeWith(v1alpha1.ReadyForUpdate, cand, "true", sel, "true", res, bad), v1alpha1.UpdateFailed},
		{"failed stays failed", nodeWith(v1alpha1.UpdateFailed, cand, "true", sel, "true", res, bad), ""},
		{"failed, then successful", nodeWith(v1alpha1.UpdateFailed, cand, "true", sel, "true", res, ok), v1alpha1.UpdateSuccessful},
		{"stale result before the go signal is ignored", nodeWith(v1alpha1.SelectedForUpdate, cand, "true", sel, "true", res, ok), ""},
		{"stale result on a new candidate", nodeWith("", cand, "true", res, ok), v1alpha1.CandidateForUpdate},
		{"successful, not cleaned up yet", nodeWith(v1alpha1.UpdateSuccessful, cand, "true", sel, "true", res, ok), ""},
		{"successful and cleaned up", nodeWith(v1alpha1.UpdateSuccessful), ""},
		{"next rollout after a successful one", nodeWith(v1alpha1.UpdateSuccessful, cand, "true"), v1alpha1.CandidateForUpdate},
		{"labels removed while ready: cancelled", nodeWith(v1alpha1.ReadyForUpdate), ReasonUpdateCancelled},
		{"labels removed while candidate: cancelled", nodeWith(v1alpha1.CandidateForUpdate), ReasonUpdateCancelled},
		{"cancelled stays", nodeWith(ReasonUpdateCancelled), ""},
		{"cancelled, candidate again", nodeWith(ReasonUpdateCancelled, cand, "true"), v1alpha1.CandidateForUpdate},
		{"failed and cleaned up stays failed", nodeWith(v1alpha1.UpdateFailed), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, NextReason(c.node))
		})
	}
}

func TestSetCondition(t *testing.T) {
	n := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	t0 := time.Unix(100, 0)
	assert.True(t, SetCondition(n, v1alpha1.SelectedForUpdate, "", t0))
	assert.False(t, SetCondition(n, v1alpha1.SelectedForUpdate, "", t0.Add(time.Minute)), "the same reason again changes nothing")
	c := Condition(n)
	assert.Equal(t, corev1.ConditionTrue, c.Status)
	assert.Equal(t, t0, c.LastTransitionTime.Time)
	// A new message keeps the transition time: the drain timeout counts
	// from the SelectedForUpdate transition.
	assert.True(t, SetCondition(n, v1alpha1.SelectedForUpdate, "draining: 2 pods left", t0.Add(time.Minute)))
	assert.Equal(t, t0, Condition(n).LastTransitionTime.Time)
	assert.True(t, SetCondition(n, ReasonUpdateCancelled, "", t0.Add(2*time.Minute)))
	assert.Equal(t, corev1.ConditionFalse, Condition(n).Status)
	assert.Equal(t, t0.Add(2*time.Minute), Condition(n).LastTransitionTime.Time)
	assert.Len(t, n.Status.Conditions, 2, "Ready is kept")
}

func TestCounts(t *testing.T) {
	var c Counts
	c.Add(nodeWith("", cand, "true"))
	c.Add(nodeWith("", cand, "true", sel, "true"))
	c.Add(nodeWith("", cand, "true", sel, "true", res, ok))
	c.Add(nodeWith("", cand, "true", sel, "true", res, bad))
	c.Add(nodeWith(""))
	assert.Equal(t, Counts{Candidates: 4, Selected: 3, Updating: 1, Updated: 1, Failed: 1}, c)
}
