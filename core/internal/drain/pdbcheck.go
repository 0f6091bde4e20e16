package drain

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// misconfiguredPDB returns the name of a PodDisruptionBudget that covers
// pod and can never allow its eviction, "" when there is none. A budget is
// misconfigured when its controller has seen its current spec, every pod it
// expects is healthy, none is being disrupted, and it still allows no
// disruption (maxUnavailable 0, or minAvailable equal to the number of
// pods): waiting will not change its answer, only an operator will. MCM
// makes the same test (machine-controller-manager
// pkg/util/provider/drain/drain.go, isMisconfiguredPdb) to fail such an
// eviction at once instead of retrying it until the drain timeout.
func (d *Drainer) misconfiguredPDB(ctx context.Context, pod *corev1.Pod) (string, error) {
	list, err := d.client.PolicyV1().PodDisruptionBudgets(pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("listing the PodDisruptionBudgets of namespace %s: %w", pod.Namespace, err)
	}
	for i := range list.Items {
		pdb := &list.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if isMisconfigured(pdb) {
			return pdb.Name, nil
		}
	}
	return "", nil
}

// isMisconfigured is the test of misconfiguredPDB for one budget.
func isMisconfigured(pdb *policyv1.PodDisruptionBudget) bool {
	st := pdb.Status
	return pdb.Generation == st.ObservedGeneration &&
		st.ExpectedPods > 0 &&
		st.CurrentHealthy >= st.ExpectedPods &&
		len(st.DisruptedPods) == 0 &&
		st.DisruptionsAllowed == 0
}
