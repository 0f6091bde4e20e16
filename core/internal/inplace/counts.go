package inplace

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// Counts are the counters of a rollout's status over the nodes it
// marked.
type Counts struct {
	// Candidates are the nodes labelled candidate-for-update.
	Candidates int32
	// Selected are the candidates also labelled selected-for-update.
	Selected int32
	// Updating are selected nodes without a result yet.
	Updating int32
	// Updated are nodes whose agent reported update-result=successful.
	Updated int32
	// Failed are nodes whose agent reported update-result=failed.
	Failed int32
}

// Add counts one node.
func (c *Counts) Add(n *corev1.Node) {
	if IsCandidate(n) {
		c.Candidates++
	}
	if IsSelected(n) {
		c.Selected++
	}
	switch Result(n) {
	case v1alpha1.LabelValueNodeUpdateSuccessful:
		c.Updated++
	case v1alpha1.LabelValueNodeUpdateFailed:
		c.Failed++
	default:
		if IsSelected(n) {
			c.Updating++
		}
	}
}
