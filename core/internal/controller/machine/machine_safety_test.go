package machine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/freeze"
	"github.com/machina-io/machina/core/internal/meltdown"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// TestMachineSafety runs the scenarios of the safety hooks (freeze gate,
// meltdown guard, class watch) and of the volume-aware drain against one
// API server, each in its own namespace with its own driver and manager.
func TestMachineSafety(t *testing.T) {
	env := testenv.Start(t)
	scenarios := []struct {
		name string
		run  func(t *testing.T, env *testenv.Env)
	}{
		{"meltdown limit", testMeltdownLimit},
		{"frozen gate", testFrozenGate},
		{"class change re-enqueues", testClassChangeReenqueues},
		{"drain waits for detach", testDrainWaitsForDetach},
		{"drain forced while waiting", testDrainForcedWhileWaiting},
		{"drain blocked by a PDB leaves the workers free", testDrainBlockedByPDBLeavesWorkersFree},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { s.run(t, env) })
	}
}

// replacingWatch counts, at every watch event of the namespace's Machines,
// how many are being replaced (Failed, or being deleted), and keeps the
// highest count seen.
type replacingWatch struct {
	mu       sync.Mutex
	state    map[string]bool
	max      int
	maxState string
}

func watchReplacing(t *testing.T, ctx context.Context, env *testenv.Env, ns string) *replacingWatch {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(ctx)
	wi, err := wc.Watch(ctx, &v1alpha1.MachineList{}, client.InNamespace(ns))
	require.NoError(t, err)
	rw := &replacingWatch{state: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer wi.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-wi.ResultChan():
				if !ok {
					return
				}
				m, ok := ev.Object.(*v1alpha1.Machine)
				if !ok {
					continue
				}
				rw.mu.Lock()
				if ev.Type == watch.Deleted {
					delete(rw.state, m.Name)
				} else {
					rw.state[m.Name] = m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed || m.DeletionTimestamp != nil
				}
				var busy []string
				for name, replacing := range rw.state {
					if replacing {
						busy = append(busy, name)
					}
				}
				if len(busy) > rw.max {
					rw.max, rw.maxState = len(busy), strings.Join(busy, ",")
				}
				rw.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return rw
}

func (rw *replacingWatch) highest() (int, string) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.max, rw.maxState
}

// Ten machines of one MachineDeployment turn unhealthy at once with the
// replacement limit at two: at no moment are more than two of them Failed
// or being deleted. The test plays the MachineSet: it deletes the Failed
// machines, and each one gone lets the next Unknown one fail.
func testMeltdownLimit(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.opts.ReplacementRecheck = 200 * time.Millisecond
	w.class("small", nil)
	names := w.guardedDeployment(10, "m", 2)
	for _, name := range names {
		w.waitPhase(name, v1alpha1.MachineRunning, waitLong)
	}
	rw := watchReplacing(t, w.ctx, env, w.ns)
	for _, name := range names {
		setNodeCondition(t, w.ctx, env.Client, name, corev1.NodeReady, corev1.ConditionFalse)
	}

	remaining := map[string]bool{}
	for _, n := range names {
		remaining[n] = true
	}
	sawHeld := false
	for len(remaining) > 0 {
		want := min(2, len(remaining))
		failed, held := w.failedAndHeld(remaining, want)
		if len(held) > 0 {
			if !sawHeld {
				w.waitEvent(held[0], corev1.EventTypeWarning, reasonReplacementHeld)
			}
			sawHeld = true
			m := w.get(held[0])
			assert.Equal(t, v1alpha1.MachineUnknown, m.Status.CurrentStatus.Phase)
			assert.Contains(t, m.Status.LastOperation.Description, "MachineDeployment "+w.ns+"/md1 already has its limit of 2")
		}
		for _, name := range failed {
			w.delete(name)
		}
		for _, name := range failed {
			w.waitGone(name, waitLong)
			delete(remaining, name)
		}
	}
	assert.True(t, sawHeld, "the limit held machines back")
	most, which := rw.highest()
	assert.LessOrEqual(t, most, 2, "machines being replaced at one moment: %s", which)
	assert.Equal(t, 2, most, "the limit was used")
}

// While the freeze gate is closed, a machine past its health timeout stays
// Unknown and one past its creation timeout stays Pending. When the gate
// opens after the API server check reset the health timeout, the Unknown
// machine becomes Failed only once the reset timeout has passed again; the
// Pending one, whose timeout counts from its creation, fails at once.
func testFrozenGate(t *testing.T, env *testenv.Env) {
	const timeout = 3 * time.Second
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	gate := &freeze.Gate{}
	var cached client.Client
	w.configure = func(r *Reconciler, c client.Client) { r.Gate, cached = gate, c }
	w.start()
	w.machine("sick", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineHealthTimeout: &v1alpha1.Duration{Duration: timeout}}
	})
	w.waitPhase("sick", v1alpha1.MachineRunning, waitLong)

	gate.Freeze("test: API server unreachable", time.Now())
	w.kubelet.holdNode("late")
	w.machine("late", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineCreationTimeout: &v1alpha1.Duration{Duration: timeout}}
	})
	setNodeCondition(t, w.ctx, env.Client, "sick", corev1.NodeReady, corev1.ConditionFalse)
	m := w.waitPhase("sick", v1alpha1.MachineUnknown, waitLong)
	require.NotNil(t, m.Status.UnhealthySince)

	// Both deadlines pass, and the controller looked at both machines
	// after that and held the decision.
	require.Eventually(t, func() bool {
		logs := w.logs.String()
		return strings.Contains(logs, "not failing an unhealthy machine by the health timeout") &&
			strings.Contains(logs, "not failing a machine that did not join by the creation timeout")
	}, waitLong, 50*time.Millisecond, "the frozen controller held both decisions")
	assert.Equal(t, v1alpha1.MachineUnknown, w.get("sick").Status.CurrentStatus.Phase)
	assert.Equal(t, v1alpha1.MachinePending, w.get("late").Status.CurrentStatus.Phase)
	assert.NotContains(t, w.rec.phasesOf("sick"), "Failed")
	assert.NotContains(t, w.rec.phasesOf("late"), "Failed")

	// The API server check resets Unknown machines before it opens the
	// gate (core/internal/controller/safety/apiserver), as here.
	sick := w.get("sick")
	base := sick.DeepCopy()
	resetAt := metav1.NewTime(time.Now().Truncate(time.Second))
	sick.Status.UnhealthySince = &resetAt
	require.NoError(t, env.Client.Status().Patch(w.ctx, sick, client.MergeFrom(base)))
	// As the check does, open the gate only once the controller's cache
	// shows the reset.
	require.Eventually(t, func() bool {
		m := &v1alpha1.Machine{}
		return cached.Get(w.ctx, client.ObjectKeyFromObject(sick), m) == nil &&
			m.Status.UnhealthySince != nil && m.Status.UnhealthySince.Equal(&resetAt)
	}, waitLong, 20*time.Millisecond)
	gate.Unfreeze()

	late := w.waitPhase("late", v1alpha1.MachineFailed, waitLong)
	assert.Contains(t, late.Status.LastOperation.Description, "creation timeout")
	sick = w.waitPhase("sick", v1alpha1.MachineFailed, waitLong)
	failedAt := sick.Status.CurrentStatus.LastUpdateTime.Time
	assert.GreaterOrEqual(t, failedAt.Sub(resetAt.Time), timeout-time.Second,
		"failed %s after the reset; the timeout counts from the reset", failedAt.Sub(resetAt.Time))
	assert.Contains(t, sick.Status.LastOperation.Description, resetAt.UTC().Format(time.RFC3339))
}

// A change of a MachineClass's spec reaches its machines at once: a machine
// whose create failed on a bad provider spec (and would retry only after
// the medium retry of a minute) is created as soon as the class is fixed.
func testClassChangeReenqueues(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.opts.MediumRetry = 10 * time.Minute
	c := w.class("small", nil)
	c.ProviderSpec = runtime.RawExtension{Raw: []byte(`{"bootDelay":"soon"}`)}
	require.NoError(t, env.Client.Update(w.ctx, c))
	w.start()
	w.machine("m1", "small")
	w.waitPhase("m1", v1alpha1.MachineCrashLoopBackOff, waitLong)

	require.NoError(t, env.Client.Get(w.ctx, client.ObjectKeyFromObject(c), c))
	c.ProviderSpec = runtime.RawExtension{Raw: []byte(`{"bootDelay":"1s"}`)}
	require.NoError(t, env.Client.Update(w.ctx, c))
	fixed := time.Now()
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	assert.Less(t, time.Since(fixed), time.Minute, "well before the medium retry")
}

// guardedDeployment creates the MachineDeployment md1 of n machines of class
// small, named prefix0 and on, each with a health timeout of a second, and
// starts the controller with the meltdown guard at limit machines in
// replacement. It returns the machines' names.
func (w *world) guardedDeployment(n int, prefix string, limit int32) []string {
	w.t.Helper()
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "md1"},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: int32(n),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "md1"}},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": "md1"}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
			},
		},
	}
	require.NoError(w.t, w.control.Client.Create(w.ctx, md))
	w.configure = func(r *Reconciler, cached client.Client) {
		r.Meltdown = meltdown.NewGuard(cached, intstr.FromInt32(limit))
	}
	w.start()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s%d", prefix, i)
		names = append(names, name)
		w.machine(name, "small", func(m *v1alpha1.Machine) {
			m.Labels = map[string]string{"pool": "md1", v1alpha1.MachineDeploymentNameLabel: "md1"}
			m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineHealthTimeout: &v1alpha1.Duration{Duration: time.Second}}
		})
	}
	return names
}

// failedAndHeld waits until want of the remaining machines are Failed and
// every other one is held by a replacement limit of 2 (not merely not yet
// past its timeout), and returns both.
func (w *world) failedAndHeld(remaining map[string]bool, want int) (failed, held []string) {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		failed, held = nil, nil
		for name := range remaining {
			// Not w.get: its require must not run in Eventually's
			// goroutine.
			m := &v1alpha1.Machine{}
			if err := w.control.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, m); err != nil {
				return false
			}
			switch {
			case m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed:
				failed = append(failed, name)
			case strings.Contains(m.Status.LastOperation.Description, "already has its limit of 2 machines being replaced"):
				held = append(held, name)
			}
		}
		return len(failed) == want && len(held) == len(remaining)-want
	}, waitLong, 50*time.Millisecond, "want %d Failed and the rest held by the limit: %s", want, lazyString(func() string {
		// Evaluated when the message is printed, after the wait: what
		// each remaining machine shows then.
		var out []string
		for name := range remaining {
			m := &v1alpha1.Machine{}
			if err := w.control.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, m); err != nil {
				out = append(out, name+": "+err.Error())
				continue
			}
			out = append(out, fmt.Sprintf("%s: %s, deleting=%t, %q", name, m.Status.CurrentStatus.Phase, m.DeletionTimestamp != nil, m.Status.LastOperation.Description))
		}
		sort.Strings(out)
		return strings.Join(out, "; ")
	}))
	return failed, held
}

// lazyString formats as what f returns when it is printed.
type lazyString func() string

func (f lazyString) String() string { return f() }
