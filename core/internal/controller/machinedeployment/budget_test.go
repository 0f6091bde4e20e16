package machinedeployment_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// testRolloutBudget: a disruption budget of 0 for rollouts lets the new set
// surge but deletes no old machine, and the deployment says why; raised to
// 1, the rollout completes. An unreadable budget refuses the deployment.
func (s *suite) testRolloutBudget(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "budget", 3)
	setRollingBounds(d, 3, 0)
	d.Spec.Disruption = &v1alpha1.MachineDeploymentDisruption{Budgets: []v1alpha1.DisruptionBudget{
		{Machines: intstr.FromInt32(0), Reasons: []v1alpha1.DisruptionReason{v1alpha1.DisruptionReasonRollout}},
	}}
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	old := map[string]bool{}
	for _, m := range s.machines(t, ns) {
		old[m.Name] = true
	}
	require.Len(t, old, 3)

	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "class-v2" })
	// Creating machines disrupts nothing: the new set surges to 3.
	require.Eventually(t, func() bool {
		n := 0
		for _, m := range s.machines(t, ns) {
			if !old[m.Name] && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning {
				n++
			}
		}
		return n == 3
	}, waitTimeout, poll, "the new set did not surge")
	s.expectEvent(t, ns, "DisruptionBudget")
	require.Eventually(t, func() bool {
		cur := &v1alpha1.MachineDeployment{}
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
			return false
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == v1alpha1.MachineDeploymentProgressing {
				return strings.Contains(c.Message, "Disruption budget: Rollout waits: spec.disruption.budgets[0] (0 machines) allows 0 machine(s)")
			}
		}
		return false
	}, waitTimeout, poll, "Progressing does not say that the budget holds the rollout")
	// The sync that wrote that message ran the rollout step before: it
	// deleted no old machine (a deleted machine without finalizers is gone
	// from the list at once, so count them).
	kept := 0
	for _, m := range s.machines(t, ns) {
		if old[m.Name] && m.DeletionTimestamp == nil {
			kept++
		}
	}
	assert.Equal(t, 3, kept, "old machines were deleted while the budget allows none")

	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Disruption.Budgets[0].Machines = intstr.FromInt32(1) })
	s.waitComplete(t, d)
	for _, m := range s.machines(t, ns) {
		assert.False(t, old[m.Name], "old machine %s is left after the rollout", m.Name)
	}

	// A schedule the manager cannot read refuses the deployment.
	s.update(t, d, func(d *v1alpha1.MachineDeployment) {
		d.Spec.Disruption.Budgets[0].Schedule = "every weekday"
		d.Spec.Disruption.Budgets[0].Duration = v1alpha1.NewDuration(3600e9)
	})
	s.expectEvent(t, ns, "InvalidDisruptionBudget")
}

// testRecreateBudget: with a budget of one machine for rollouts, Recreate
// shrinks the old set one machine at a time (3, 2, 1, 0) instead of to 0 at
// once, and still recreates every machine.
func (s *suite) testRecreateBudget(t *testing.T) {
	ctx := t.Context()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "recreate-budget", 3)
	d.Spec.Strategy.Type = v1alpha1.RecreateMachineDeploymentStrategyType
	d.Spec.Disruption = &v1alpha1.MachineDeploymentDisruption{Budgets: []v1alpha1.DisruptionBudget{{Machines: intstr.FromInt32(1)}}}
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	sets := s.sets(t, ns)
	require.Len(t, sets, 1)
	oldSet := sets[0].Name

	// Every replicas value the old set is given, from a watch of the sets.
	wc, err := client.NewWithWatch(s.env.Config, client.Options{Scheme: s.env.Scheme})
	require.NoError(t, err)
	w, err := wc.Watch(ctx, &v1alpha1.MachineSetList{}, client.InNamespace(ns))
	require.NoError(t, err)
	defer w.Stop()
	var (
		mu     sync.Mutex
		values []int32
	)
	go func() {
		for ev := range w.ResultChan() {
			ms, ok := ev.Object.(*v1alpha1.MachineSet)
			if !ok || ms.Name != oldSet {
				continue
			}
			mu.Lock()
			if len(values) == 0 || values[len(values)-1] != ms.Spec.Replicas {
				values = append(values, ms.Spec.Replicas)
			}
			mu.Unlock()
		}
	}()

	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "class-v2" })
	s.waitComplete(t, d)
	for _, m := range s.machines(t, ns) {
		assert.Equal(t, "class-v2", m.Spec.Class.Name)
	}
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(values) > 0 && values[len(values)-1] == 0
	}, waitTimeout, poll, "the old set did not reach 0")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []int32{3, 2, 1, 0}, values, "the old set shrank by more than the budget's one machine at a time")
}
