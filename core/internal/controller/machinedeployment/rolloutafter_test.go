package machinedeployment_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/machinedeployment"
)

// testRolloutAfter: spec.rolloutAfter before the machines were created, or
// still to come, changes nothing; once a later time passes (nothing but the
// requeue wakes the deployment then), every machine is replaced within
// maxSurge and maxUnavailable.
func (s *suite) testRolloutAfter(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "restart", 3)
	setRollingBounds(d, 1, 0)
	past := metav1.NewTime(time.Now().Add(-time.Hour))
	d.Spec.RolloutAfter = &past
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	first := s.sets(t, ns)
	require.Len(t, first, 1, "a rolloutAfter older than the deployment's machines rolls nothing")
	oldNames := map[string]bool{}
	for _, m := range s.machines(t, ns) {
		oldNames[m.Name] = true
	}

	// A time still to come changes nothing either.
	future := metav1.NewTime(time.Now().Add(time.Hour))
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.RolloutAfter = &future })
	s.waitComplete(t, d)
	require.Len(t, s.sets(t, ns), 1)
	assert.Equal(t, "1", d.Annotations[v1alpha1.RevisionAnnotation])
	for _, m := range s.machines(t, ns) {
		assert.True(t, oldNames[m.Name], "machine %s is new before rolloutAfter", m.Name)
	}

	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	require.Eventually(t, func() bool { return obs.Current().Count(running) == 3 }, waitTimeout, poll)
	mark := obs.Mark()
	// A time a few seconds ahead (metav1.Time keeps seconds): the rollout
	// starts when it passes.
	soon := metav1.NewTime(time.Now().Truncate(time.Second).Add(3 * time.Second))
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.RolloutAfter = &soon })
	require.Eventually(t, func() bool {
		s.get(t, d)
		if d.Annotations[v1alpha1.RevisionAnnotation] != "2" {
			return false
		}
		for _, m := range s.machines(t, ns) {
			if oldNames[m.Name] || !running(&m) {
				return false
			}
		}
		return len(s.machines(t, ns)) == 3
	}, waitTimeout, poll, "the machines were not replaced after rolloutAfter")
	s.waitComplete(t, d)

	for i, st := range obs.StatesSince(mark) {
		assert.LessOrEqual(t, st.Count(live), 4, "state %d: more than replicas+maxSurge machines: %v", i, st.Names())
		assert.GreaterOrEqual(t, st.Count(running), 3, "state %d: fewer than replicas-maxUnavailable available: %v", i, st.Names())
	}
	sets := s.sets(t, ns)
	require.Len(t, sets, 2)
	for _, ms := range sets {
		if ms.Name == first[0].Name {
			assert.Equal(t, int32(0), ms.Spec.Replicas, "the old set is scaled away and kept")
			continue
		}
		assert.Equal(t, int32(3), ms.Spec.Replicas)
		assert.False(t, ms.CreationTimestamp.Before(&soon), "the new set was created before rolloutAfter")
		assert.Equal(t, soon.UTC().Format(time.RFC3339), ms.Annotations[machinedeployment.AnnotationRolloutAfter])
		assert.NotEqual(t, first[0].Labels[v1alpha1.DefaultMachineDeploymentUniqueLabelKey], ms.Labels[v1alpha1.DefaultMachineDeploymentUniqueLabelKey])
	}

}
