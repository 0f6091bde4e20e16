package machinedeployment_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
)

func expiringDeployment(ns, name string, surge, unavailable int32, expireAfter time.Duration) *v1alpha1.MachineDeployment {
	d := newDeployment(ns, name, 3)
	setRollingBounds(d, surge, unavailable)
	d.Spec.Template.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineExpireAfter: v1alpha1.NewDuration(expireAfter)}
	return d
}

// testExpireAfter: machines older than expireAfter are replaced one at a
// time within maxUnavailable; with maxUnavailable 0 none is, and an event
// says why.
func (s *suite) testExpireAfter(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 300*time.Millisecond)
	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	d := expiringDeployment(ns, "expire", 0, 1, 4*time.Second)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	first := map[string]bool{}
	for _, m := range s.machines(t, ns) {
		first[m.Name] = true
	}
	mark := obs.Mark()
	require.Eventually(t, func() bool {
		for _, m := range s.machines(t, ns) {
			if first[m.Name] {
				return false
			}
		}
		return true
	}, waitTimeout, poll, "the expired machines were not replaced")
	// Stop the expiry before checking, so that the deployment settles.
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.MachineConfiguration = nil })
	s.waitComplete(t, d)
	assert.Len(t, s.sets(t, ns), 1, "expiry is no rollout")

	for i, st := range obs.StatesSince(mark) {
		assert.LessOrEqual(t, st.Count(live), 3, "state %d: expiry surged: %v", i, st.Names())
		assert.GreaterOrEqual(t, st.Count(running), 2, "state %d: more than maxUnavailable machines unavailable: %v", i, st.Names())
		terminating := st.Count(func(m *v1alpha1.Machine) bool { return m.DeletionTimestamp != nil })
		assert.LessOrEqual(t, terminating, 1, "state %d: more than one expired machine at a time: %v", i, st.Names())
	}
	s.expectEvent(t, ns, "MachineExpired")

	// maxUnavailable 0: expired machines stay, and the deployment says why.
	ns2 := s.namespace(t)
	s.joiner(t, ns2, 0)
	held := expiringDeployment(ns2, "held", 1, 0, time.Second)
	require.NoError(t, s.c.Create(ctx, held))
	s.waitComplete(t, held)
	kept := s.machines(t, ns2)
	s.expectEvent(t, ns2, "ExpiryBlocked")
	for _, m := range s.machines(t, ns2) {
		assert.Nil(t, m.DeletionTimestamp, "machine %s was deleted with maxUnavailable 0", m.Name)
	}
	assert.Len(t, s.machines(t, ns2), len(kept))
	s.update(t, held, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.MachineConfiguration = nil })
}

// testExpiryHonoursDoNotDisrupt: an expired machine whose node, or a pod on
// it, asks not to be disrupted is not deleted, and an event says why; once
// the pod is gone the machine expires at the next look.
func (s *suite) testExpiryHonoursDoNotDisrupt(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := expiringDeployment(ns, "dnd", 0, 1, time.Hour)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	machines := s.machines(t, ns)
	require.Len(t, machines, 3)
	// The joiner names each Node after its machine. Two nodes run a pod
	// that asks; the third asks itself, with Karpenter's key.
	var pods []*corev1.Pod
	for _, m := range machines[:2] {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "batch-" + m.Name, Namespace: ns,
				Annotations: map[string]string{"machina.io/do-not-disrupt": "true"}},
			Spec: corev1.PodSpec{NodeName: m.Name, Containers: []corev1.Container{{Name: "c", Image: "batch"}}},
		}
		require.NoError(t, s.c.Create(ctx, p))
		pods = append(pods, p)
	}
	node := &corev1.Node{}
	require.NoError(t, s.c.Get(ctx, client.ObjectKey{Name: machines[2].Name}, node))
	patched := node.DeepCopy()
	patched.Annotations = map[string]string{"karpenter.sh/do-not-disrupt": "true"}
	require.NoError(t, s.c.Patch(ctx, patched, client.MergeFrom(node)))

	s.update(t, d, func(d *v1alpha1.MachineDeployment) {
		d.Spec.Template.Spec.MachineConfiguration.MachineExpireAfter = v1alpha1.NewDuration(time.Second)
	})
	s.expectEvent(t, ns, "DisruptionHeld")
	// A deleted machine without finalizers is gone at once and its set makes
	// another: look each one up by name.
	for _, m := range machines {
		cur := &v1alpha1.Machine{}
		require.NoError(t, s.c.Get(ctx, client.ObjectKeyFromObject(&m), cur), "machine %s was expired while its node asks not to be disrupted", m.Name)
		assert.Nil(t, cur.DeletionTimestamp, "machine %s was expired while its node asks not to be disrupted", m.Name)
	}

	// The first pod is gone: its machine expires at the next look
	// (disruption.Recheck: pods are not watched); the others stay.
	require.NoError(t, s.c.Delete(ctx, pods[0], client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool {
		m := &v1alpha1.Machine{}
		err := s.c.Get(ctx, client.ObjectKeyFromObject(&machines[0]), m)
		return apierrors.IsNotFound(err) || (err == nil && m.DeletionTimestamp != nil)
	}, waitTimeout, poll, "machine %s did not expire once its pod was gone", machines[0].Name)
	for _, m := range machines[1:] {
		cur := &v1alpha1.Machine{}
		require.NoError(t, s.c.Get(ctx, client.ObjectKeyFromObject(&m), cur), "machine %s was expired while its node asks not to be disrupted", m.Name)
		assert.Nil(t, cur.DeletionTimestamp, "machine %s was expired while its node asks not to be disrupted", m.Name)
	}
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.MachineConfiguration = nil })
}

// expectEvent waits for an event of the reason in the namespace.
func (s *suite) expectEvent(t *testing.T, ns, reason string) {
	t.Helper()
	require.Eventually(t, func() bool {
		list := &corev1.EventList{}
		if err := s.c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.Reason == reason {
				return true
			}
		}
		return false
	}, waitTimeout, poll, "no %s event in %s", reason, ns)
}
