package machine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// TestNodePriority: of an in-place rollout's nodes, the selected ones and
// those with the agent's result are served before the mere candidates.
func TestNodePriority(t *testing.T) {
	node := func(labels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
	}
	candidate := map[string]string{v1alpha1.LabelKeyNodeCandidateForUpdate: "true"}
	selected := map[string]string{v1alpha1.LabelKeyNodeCandidateForUpdate: "true", v1alpha1.LabelKeyNodeSelectedForUpdate: "true"}
	result := map[string]string{v1alpha1.LabelKeyNodeCandidateForUpdate: "true", v1alpha1.LabelKeyNodeUpdateResult: v1alpha1.LabelValueNodeUpdateSuccessful}

	assert.Equal(t, setup.HighPriority, nodePriority(node(nil)), "a plain node")
	assert.Equal(t, setup.HighPriority, nodePriority(node(candidate)), "a candidate")
	assert.Equal(t, setup.UrgentPriority, nodePriority(node(selected)), "a selected node")
	assert.Equal(t, setup.UrgentPriority, nodePriority(node(result)), "a node with the agent's result")
}
