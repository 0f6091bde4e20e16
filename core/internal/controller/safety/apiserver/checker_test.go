package apiserver_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/safety/apiserver"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/freeze"
	"github.com/machina-io/machina/core/testenv"
)

const holdFinalizer = "test.machina.io/hold"

func TestAPIServerFreeze(t *testing.T) {
	env := testenv.Start(t)

	t.Run("an outage longer than the timeout freezes; recovery resets Unknown machines", func(t *testing.T) {
		ctx := context.Background()
		c := env.Client
		ns := controllertest.Namespace(t, c, "apisafety")
		longAgo := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
		sick := machine(t, c, ns, "sick", v1alpha1.MachineUnknown, &longAgo)
		fine := machine(t, c, ns, "fine", v1alpha1.MachineRunning, nil)
		leaving := machine(t, c, ns, "leaving", v1alpha1.MachineUnknown, &longAgo)
		controllerutil.AddFinalizer(leaving, holdFinalizer)
		require.NoError(t, c.Update(ctx, leaving))
		require.NoError(t, c.Delete(ctx, leaving))
		t.Cleanup(func() {
			m := &v1alpha1.Machine{}
			if c.Get(ctx, client.ObjectKeyFromObject(leaving), m) == nil {
				controllerutil.RemoveFinalizer(m, holdFinalizer)
				_ = c.Update(ctx, m)
			}
		})

		proxy := controllertest.StartProxy(t, env.Config)
		mgr := controllertest.NewManager(t, env.Config, env.Scheme)
		gate := &freeze.Gate{}
		reg := prometheus.NewRegistry()
		rec := &rounds{}
		var catchUps atomic.Int32
		const timeout = 400 * time.Millisecond
		chk := &apiserver.Checker{
			Clusters: []apiserver.Cluster{
				{Name: "control", Config: env.Config},
				{Name: "target", Config: proxy.Config(env.Config)},
			},
			Gate:       gate,
			Namespace:  ns,
			Period:     50 * time.Millisecond,
			Timeout:    timeout,
			Registerer: reg,
			// The first call finds the caches behind; the gate must stay
			// frozen until a later one finds them caught up.
			CatchUp: func(context.Context, time.Duration) error {
				if catchUps.Add(1) == 1 {
					return errors.New("test: caches behind")
				}
				return nil
			},
		}
		// When the gate opens, what does the controllers' cache show?
		chk.Observe = rec.observer(func(r apiserver.Round) string {
			if r.Frozen {
				return ""
			}
			m := &v1alpha1.Machine{}
			if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(sick), m); err != nil {
				return err.Error()
			}
			return m.Status.UnhealthySince.UTC().Format(time.RFC3339)
		})
		require.NoError(t, chk.SetupWithManager(mgr, setup.Env{}))
		controllertest.Start(t, mgr)
		require.Eventually(t, func() bool { return rec.count(func(r apiserver.Round) bool { return len(r.Unreachable) == 0 }) >= 2 },
			controllertest.WaitFor, controllertest.Tick)
		assert.False(t, gate.Frozen())
		assert.Equal(t, 0.0, gauge(t, reg))

		changed := gate.Changed()
		downAt := time.Now()
		proxy.SetDown(true)
		select {
		case <-changed:
		case <-time.After(controllertest.WaitFor):
			t.Fatal("the gate never froze")
		}
		frozenAt := time.Now()
		require.True(t, gate.Frozen())
		assert.GreaterOrEqual(t, frozenAt.Sub(downAt), timeout, "froze before the timeout passed")
		assert.False(t, gate.Since().Before(downAt), "the outage began with the first failed probe, not before the proxy went down")
		assert.Less(t, gate.Since().Sub(downAt), timeout, "the outage's start is the first failed probe, not the freeze")
		assert.True(t, strings.HasPrefix(gate.Reason(), "target API server unreachable since"), gate.Reason())
		assert.Equal(t, 1.0, gauge(t, reg))

		// Frozen, the checker touches no machine.
		got := get(t, c, sick)
		assert.True(t, got.Status.UnhealthySince.Equal(&longAgo))

		upAt := time.Now().Truncate(time.Second)
		openedBefore := rec.len()
		outageSince := gate.Since()
		proxy.SetDown(false)
		require.Eventually(t, func() bool { return !gate.Frozen() }, controllertest.WaitFor, controllertest.Tick)
		openedAt := time.Now()
		assert.Equal(t, 0.0, gauge(t, reg))

		// The caches were asked to catch up, and the gate stayed frozen
		// while they had not.
		assert.GreaterOrEqual(t, catchUps.Load(), int32(2), "CatchUp failed once, so the gate must have waited for a second call")
		// Timeouts stay held for as long as the outage lasted.
		grace := gate.GraceUntil().Sub(openedAt)
		assert.Greater(t, gate.GraceUntil(), openedAt, "no grace period after the outage")
		assert.InDelta(t, openedAt.Sub(outageSince).Seconds(), grace.Seconds(), 1, "the grace period is as long as the outage")
		assert.True(t, gate.HoldsTimeouts(openedAt))

		got = get(t, c, sick)
		assert.Equal(t, v1alpha1.MachineUnknown, got.Status.CurrentStatus.Phase, "reset, not failed")
		require.NotNil(t, got.Status.UnhealthySince)
		assert.False(t, got.Status.UnhealthySince.Time.Before(upAt), "unhealthySince %s is not reset (recovery at %s)", got.Status.UnhealthySince, upAt)
		assert.Equal(t, apiserver.ResetDescription, got.Status.LastOperation.Description)
		assert.Equal(t, v1alpha1.MachineOperationHealthCheck, got.Status.LastOperation.Type)

		// The cache the controllers read showed the reset when the gate opened.
		seen := rec.firstAfter(openedBefore, func(r apiserver.Round) bool { return !r.Frozen })
		assert.Equal(t, got.Status.UnhealthySince.UTC().Format(time.RFC3339), seen)

		assert.Empty(t, get(t, c, fine).Status.LastOperation.Description, "a Running machine is not touched")
		assert.True(t, get(t, c, leaving).Status.UnhealthySince.Equal(&longAgo), "a machine being deleted is not touched")
		require.Eventually(t, func() bool { return hasEvent(t, c, sick, apiserver.ReasonHealthTimeoutReset) }, controllertest.WaitFor, controllertest.Tick)
	})

	t.Run("an outage shorter than the timeout does not freeze", func(t *testing.T) {
		proxy := controllertest.StartProxy(t, env.Config)
		mgr := controllertest.NewManager(t, env.Config, env.Scheme)
		gate := &freeze.Gate{}
		rec := &rounds{}
		const timeout = 2 * time.Second
		chk := &apiserver.Checker{
			Clusters:   []apiserver.Cluster{{Name: "control", Config: proxy.Config(env.Config)}},
			Gate:       gate,
			Period:     50 * time.Millisecond,
			Timeout:    timeout,
			Registerer: prometheus.NewRegistry(),
			Observe:    rec.observer(nil),
		}
		require.NoError(t, chk.SetupWithManager(mgr, setup.Env{}))
		controllertest.Start(t, mgr)
		require.Eventually(t, func() bool { return rec.len() >= 1 }, controllertest.WaitFor, controllertest.Tick)

		proxy.SetDown(true)
		before := rec.len()
		require.Eventually(t, func() bool {
			return rec.countFrom(before, func(r apiserver.Round) bool { return r.Unreachable["control"] != nil }) >= 2
		}, controllertest.WaitFor, controllertest.Tick)
		proxy.SetDown(false)
		deadline := time.Now().Add(2 * timeout)
		for time.Now().Before(deadline) {
			require.False(t, gate.Frozen(), "a blip shorter than the timeout froze the controllers")
			time.Sleep(controllertest.Tick)
		}
	})
}

func TestCheckerRequiresGate(t *testing.T) {
	r := (&apiserver.Checker{Clusters: []apiserver.Cluster{{Name: "x"}}}).Check(context.Background())
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "Gate is required")
}

func machine(t *testing.T, c client.Client, ns, name string, phase v1alpha1.MachinePhase, unhealthySince *metav1.Time) *v1alpha1.Machine {
	t.Helper()
	ctx := context.Background()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}, ProviderID: "p://" + name},
	}
	require.NoError(t, c.Create(ctx, m))
	m.Status.CurrentStatus.Phase = phase
	m.Status.UnhealthySince = unhealthySince
	require.NoError(t, c.Status().Update(ctx, m))
	return m
}

func get(t *testing.T, c client.Client, m *v1alpha1.Machine) *v1alpha1.Machine {
	t.Helper()
	out := &v1alpha1.Machine{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(m), out))
	return out
}

func hasEvent(t *testing.T, c client.Client, m *v1alpha1.Machine, reason string) bool {
	list := &corev1.EventList{}
	require.NoError(t, c.List(context.Background(), list, client.InNamespace(m.Namespace)))
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Machine" && e.InvolvedObject.Name == m.Name && e.Reason == reason {
			return true
		}
	}
	return false
}

func gauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "mcm_machine_controller_frozen" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("mcm_machine_controller_frozen is not registered")
	return 0
}

// rounds records the checker's rounds, and what a probe function saw right
// after each.
type rounds struct {
	mu     sync.Mutex
	rounds []apiserver.Round
	seen   []string
}

func (r *rounds) observer(probe func(apiserver.Round) string) func(apiserver.Round) {
	return func(round apiserver.Round) {
		s := ""
		if probe != nil {
			s = probe(round)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.rounds = append(r.rounds, round)
		r.seen = append(r.seen, s)
	}
}

func (r *rounds) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.rounds)
}

func (r *rounds) count(pred func(apiserver.Round) bool) int { return r.countFrom(0, pred) }

func (r *rounds) countFrom(from int, pred func(apiserver.Round) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, round := range r.rounds[from:] {
		if pred(round) {
			n++
		}
	}
	return n
}

// firstAfter returns what the probe saw after the first round from index
// from on that matches pred.
func (r *rounds) firstAfter(from int, pred func(apiserver.Round) bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := from; i < len(r.rounds); i++ {
		if pred(r.rounds[i]) {
			return r.seen[i]
		}
	}
	return "<no such round>"
}
