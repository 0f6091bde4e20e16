package mcdrain_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mcdrain"
	"github.com/machina-io/machina/core/testenv"
)

// TestPoolDrainFollowsDrainRules: a pool's drain of a Node follows the
// MachineDrainRules that select the Node's Machine: a Skip rule leaves its
// pod, a WaitCompleted rule keeps the drain from being acknowledged until
// its pod has completed, and neither pod is evicted.
func TestPoolDrainFollowsDrainRules(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	startController(t, env)
	const ns = "pool-rules"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	node := createNodes(t, c, "rules", 1, nil)[0]
	controllertest.PatchNodeAnnotations(t, c, node, map[string]string{keyDesired: "rendered-r-2", keyCurrent: "rendered-r-1"})
	require.NoError(t, c.Create(ctx, &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1", Labels: map[string]string{v1alpha1.NodeLabelKey: node, "pool": "a"}},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
	}))
	rule := func(name string, behavior machinaio.DrainBehavior, app string) {
		require.NoError(t, c.Create(ctx, &machinaio.MachineDrainRule{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: machinaio.MachineDrainRuleSpec{
				Drain:    machinaio.MachineDrainRuleDrain{Behavior: behavior},
				Machines: []machinaio.MachineDrainRuleMachineSelector{{Selector: machinaio.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}}},
				Pods:     []machinaio.MachineDrainRulePodSelector{{Selector: &machinaio.LabelSelector{MatchLabels: map[string]string{"app": app}}}},
			},
		}))
	}
	rule("keep-logs", machinaio.DrainBehaviorSkip, "logs")
	rule("wait-jobs", machinaio.DrainBehaviorWaitCompleted, "job")
	for _, app := range []string{"web", "logs", "job"} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app + "-1", Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
		}
		require.NoError(t, c.Create(ctx, p))
		p.Status.Phase = corev1.PodRunning
		require.NoError(t, c.Status().Update(ctx, p))
	}
	pod := func(name string) (*corev1.Pod, bool) {
		p := &corev1.Pod{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
		if apierrors.IsNotFound(err) {
			return nil, false
		}
		require.NoError(t, err)
		return p, true
	}
	acked := func() bool {
		return controllertest.GetNode(t, c, node).Annotations[keyLastApplied] == "drain-rendered-r-2"
	}

	controllertest.PatchNodeAnnotations(t, c, node, map[string]string{keyDrain: "drain-rendered-r-2"})
	// web-1 is evicted; no kubelet runs, so the test removes it.
	require.Eventually(t, func() bool {
		p, ok := pod("web-1")
		return ok && p.DeletionTimestamp != nil
	}, 30*time.Second, 20*time.Millisecond, "web-1 is never evicted")
	require.NoError(t, c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web-1"}}, client.GracePeriodSeconds(0)))

	// job-1 runs: the drain is not acknowledged, and nothing else evicted.
	require.Never(t, acked, 7*time.Second, 100*time.Millisecond, "acknowledged while job-1 ran (the controller retries every 5s)")
	for _, name := range []string{"logs-1", "job-1"} {
		p, ok := pod(name)
		require.True(t, ok, name)
		assert.Nil(t, p.DeletionTimestamp, "%s was evicted", name)
	}

	// The wait is told once, naming the pod and its rule.
	require.Eventually(t, func() bool {
		list := &eventsv1.EventList{}
		require.NoError(t, c.List(ctx, list))
		for _, e := range list.Items {
			if e.Reason == mcdrain.ReasonDrainWaiting && e.Regarding.Name == node &&
				strings.Contains(e.Note, "waiting for pod "+ns+"/job-1 (MachineDrainRule wait-jobs) to complete") {
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "no DrainWaiting event names job-1 and its rule")

	p, _ := pod("job-1")
	p.Status.Phase = corev1.PodSucceeded
	require.NoError(t, c.Status().Update(ctx, p))
	controllertest.WaitObject(t, c, client.ObjectKey{Name: node}, "drain acknowledged once job-1 completed", func(n *corev1.Node) bool {
		return n.Annotations[keyLastApplied] == "drain-rendered-r-2"
	})
	p, ok := pod("logs-1")
	require.True(t, ok)
	assert.Nil(t, p.DeletionTimestamp, "the Skip rule's pod stays")
}
