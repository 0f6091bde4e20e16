package meltdown_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/meltdown"
	"github.com/machina-io/machina/core/testenv"
)

func TestGuard(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ctx := context.Background()
	mgr := controllertest.NewManager(t, env.Config, env.Scheme)
	controllertest.Start(t, mgr)
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx))

	ns := controllertest.Namespace(t, c, "meltdown")
	md := deployment(t, c, ns, "workers", 10, "2")
	var machines []*v1alpha1.Machine
	for i := range 10 {
		machines = append(machines, machine(t, c, ns, fmt.Sprintf("workers-%d", i), md.Name, v1alpha1.MachineUnknown))
	}
	waitCached(t, mgr.GetClient(), ns, 10, 0)
	guard := meltdown.NewGuard(mgr.GetClient(), meltdown.MustParseLimit("1"))

	// Ten Unknown machines past their health timeout ask at once.
	var mu sync.Mutex
	var allowed []*v1alpha1.Machine
	var wg sync.WaitGroup
	for _, m := range machines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := guard.Admit(ctx, m)
			assert.NoError(t, err)
			assert.Equal(t, ns+"/workers", d.Deployment)
			assert.Equal(t, 2, d.Limit, "the annotation overrides the default of 1")
			if d.Allowed {
				mu.Lock()
				allowed = append(allowed, m)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, allowed, 2, "a limit of 2 admits exactly 2 of 10")

	// The two are marked Failed; once the cache shows it, the permits are
	// superseded by the observed state and still nobody else gets through.
	for _, m := range allowed {
		setPhase(t, c, m, v1alpha1.MachineFailed)
	}
	waitCached(t, mgr.GetClient(), ns, 10, 2)
	for _, m := range machines {
		d, err := guard.Admit(ctx, m)
		require.NoError(t, err)
		isAllowed := m == allowed[0] || m == allowed[1]
		assert.Equal(t, isAllowed, d.Allowed, "machine %s", m.Name)
		assert.Equal(t, 2, d.InProgress)
	}

	// One replacement is done: its Failed machine is gone and its new
	// machine Running. Room for one more.
	require.NoError(t, c.Delete(ctx, allowed[0]))
	waitCached(t, mgr.GetClient(), ns, 9, 1)
	granted := 0
	for _, m := range machines {
		if m == allowed[0] || m == allowed[1] {
			continue
		}
		d, err := guard.Admit(ctx, m)
		require.NoError(t, err)
		if d.Allowed {
			granted++
		}
	}
	assert.Equal(t, 1, granted)

	t.Run("a machine of no deployment is always allowed", func(t *testing.T) {
		m := machine(t, c, ns, "loner", "", v1alpha1.MachineUnknown)
		d, err := guard.Admit(ctx, m)
		require.NoError(t, err)
		assert.True(t, d.Allowed)
		assert.Empty(t, d.Deployment)
	})

	t.Run("a machine whose deployment is gone is allowed", func(t *testing.T) {
		m := machine(t, c, ns, "stray", "no-such-deployment", v1alpha1.MachineUnknown)
		d, err := guard.Admit(ctx, m)
		require.NoError(t, err)
		assert.True(t, d.Allowed)
	})

	t.Run("a malformed annotation falls back to the default, with a warning", func(t *testing.T) {
		other := deployment(t, c, ns, "typo", 4, "two")
		a := machine(t, c, ns, "typo-a", other.Name, v1alpha1.MachineUnknown)
		b := machine(t, c, ns, "typo-b", other.Name, v1alpha1.MachineUnknown)
		require.Eventually(t, func() bool {
			return mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(other), &v1alpha1.MachineDeployment{}) == nil
		}, controllertest.WaitFor, controllertest.Tick)
		waitCached(t, mgr.GetClient(), ns, 13, 1) // 9 of workers, loner, stray, typo-a, typo-b
		d, err := guard.Admit(ctx, a)
		require.NoError(t, err)
		require.NotNil(t, d.Warning)
		assert.Contains(t, d.Warning.Error(), meltdown.Annotation)
		assert.Equal(t, 1, d.Limit)
		assert.True(t, d.Allowed)
		d, err = guard.Admit(ctx, b)
		require.NoError(t, err)
		assert.False(t, d.Allowed, "the default limit of 1 is taken")

		// Release gives the permit back, e.g. when the Failed write failed.
		guard.Release(a)
		d, err = guard.Admit(ctx, b)
		require.NoError(t, err)
		assert.True(t, d.Allowed)
	})
}

func deployment(t *testing.T, c client.Client, ns, name string, replicas int32, limit string) *v1alpha1.MachineDeployment {
	t.Helper()
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{meltdown.Annotation: limit}},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
			},
		},
	}
	require.NoError(t, c.Create(context.Background(), md))
	return md
}

func machine(t *testing.T, c client.Client, ns, name, deployment string, phase v1alpha1.MachinePhase) *v1alpha1.Machine {
	t.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
	}
	if deployment != "" {
		m.Labels = map[string]string{v1alpha1.MachineDeploymentNameLabel: deployment}
	}
	require.NoError(t, c.Create(context.Background(), m))
	setPhase(t, c, m, phase)
	return m
}

func setPhase(t *testing.T, c client.Client, m *v1alpha1.Machine, phase v1alpha1.MachinePhase) {
	t.Helper()
	m.Status.CurrentStatus.Phase = phase
	m.Status.CurrentStatus.LastUpdateTime = metav1.Now()
	require.NoError(t, c.Status().Update(context.Background(), m))
}

// waitCached waits until the cache shows n machines in ns, each with the
// phase the test gave it (a machine the cache still shows without a phase
// counts as being replaced), failed of them Failed.
func waitCached(t *testing.T, r client.Reader, ns string, n, failed int) {
	t.Helper()
	require.Eventually(t, func() bool {
		list := &v1alpha1.MachineList{}
		if r.List(context.Background(), list, client.InNamespace(ns)) != nil || len(list.Items) != n {
			return false
		}
		f := 0
		for _, m := range list.Items {
			if m.Status.CurrentStatus.Phase == "" {
				return false
			}
			if m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed {
				f++
			}
		}
		return f == failed
	}, controllertest.WaitFor, controllertest.Tick)
}
