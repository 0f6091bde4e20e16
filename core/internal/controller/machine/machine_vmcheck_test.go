package machine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/machineset"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/meltdown"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// TestVMStatusCheck runs the scenarios of the VM check without a target
// cluster (machine_vmcheck.go) against one API server, each in its own
// namespace with its own inmemory driver on a Unix socket and its own
// manager.
func TestVMStatusCheck(t *testing.T) {
	env := testenv.Start(t)
	scenarios := []struct {
		name string
		run  func(t *testing.T, env *testenv.Env)
	}{
		{"lost VMs are replaced within the meltdown limit", testLostVMsReplaced},
		{"a MachineSet replaces machines whose VMs were lost", testLostVMsReplacedBySet},
		{"a failing driver fails no machine", testVMCheckTransientErrors},
		{"checks are paced", testVMCheckPaced},
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) { s.run(t, env) })
	}
}

// vmCheckWorld is a world without a target cluster whose VM checks run
// every period.
func vmCheckWorld(t *testing.T, env *testenv.Env, period time.Duration) *world {
	w := newWorld(t, env, env, inmemory.Options{})
	w.noTarget = true
	w.opts.VMStatusCheckPeriod = period
	w.opts.VMStatusCheckRate = 1000
	w.class("small", nil)
	return w
}

// deleteVM deletes the machine's VM in the driver, behind the manager's
// back, as a provider that lost it would.
func (w *world) deleteVM(name string) {
	w.t.Helper()
	m := w.get(name)
	require.NotNil(w.t, m)
	_, err := w.mem.DeleteMachine(w.ctx, &driverv1alpha1.DeleteMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: name, Namespace: w.ns, ProviderId: m.Spec.ProviderID},
		MachineClass: &driverv1alpha1.MachineClass{Name: m.Spec.Class.Name, Namespace: w.ns, ProviderSpec: []byte(`{}`)},
	})
	require.NoError(w.t, err)
}

// The driver loses the VMs of all eight machines of a MachineDeployment.
// Each machine turns Unknown, then Failed once its health timeout has
// passed, but never more than the replacement limit of two at a time. The
// test plays the MachineSet: it deletes the Failed machines, and each one
// gone lets the next fail.
func testLostVMsReplaced(t *testing.T, env *testenv.Env) {
	w := vmCheckWorld(t, env, 200*time.Millisecond)
	w.opts.ReplacementRecheck = 200 * time.Millisecond
	names := w.guardedDeployment(8, "v", 2)
	for _, name := range names {
		w.waitPhase(name, v1alpha1.MachineAvailable, waitLong)
	}
	// Healthy VMs keep their machines Available through several checks.
	checksBefore := len(w.drv.callTimes(inmemory.MethodGetMachineStatus))
	require.Eventually(t, func() bool {
		return len(w.drv.callTimes(inmemory.MethodGetMachineStatus)) >= checksBefore+3*len(names)
	}, waitLong, 20*time.Millisecond, "the VMs are checked periodically")
	for _, name := range names {
		assert.Equal(t, v1alpha1.MachineAvailable, w.get(name).Status.CurrentStatus.Phase, name)
	}

	rw := watchReplacing(t, w.ctx, env, w.ns)
	for _, name := range names {
		w.deleteVM(name)
	}
	// Every machine turns Unknown. The first ones past their health
	// timeout of a second may be Failed already when the test gets to
	// them, so the wait is for the recorder to have seen Unknown, not for
	// the phase now.
	for _, name := range names {
		require.Eventually(t, func() bool { return slices.Contains(w.rec.phasesOf(name), string(v1alpha1.MachineUnknown)) },
			waitLong, 20*time.Millisecond, "%s never turned Unknown", name)
	}
	note := w.waitEvent(names[0], corev1.EventTypeWarning, reasonUnhealthy)
	assert.Contains(t, note, "does not find VM")

	remaining := map[string]bool{}
	for _, n := range names {
		remaining[n] = true
	}
	for len(remaining) > 0 {
		want := min(2, len(remaining))
		failed, _ := w.failedAndHeld(remaining, want)
		for _, name := range failed {
			m := w.get(name)
			assert.Contains(t, m.Status.LastOperation.Description, "does not find VM", name)
			w.delete(name)
		}
		for _, name := range failed {
			w.waitGone(name, waitLong)
			delete(remaining, name)
		}
	}
	most, which := rw.highest()
	assert.LessOrEqual(t, most, 2, "machines being replaced at one moment: %s", which)
	assert.Empty(t, w.mem.VMs(), "no VM is created for a machine whose VM was lost")
}

// The real MachineSet controller (in a manager of its own) keeps six
// machines of a set whose label names MachineDeployment md2 (replacement
// limit two). The driver loses every VM: the machines turn Unknown, then
// Failed two at a time, the set deletes them and creates new ones, and in
// the end the set has six Available machines with six new VMs.
func testLostVMsReplacedBySet(t *testing.T, env *testenv.Env) {
	w := vmCheckWorld(t, env, 200*time.Millisecond)
	w.opts.ReplacementRecheck = 200 * time.Millisecond
	labels := map[string]string{"pool": "rs", v1alpha1.MachineDeploymentNameLabel: "md2"}
	template := v1alpha1.MachineTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: v1alpha1.MachineSpec{
			Class:                v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"},
			MachineConfiguration: &v1alpha1.MachineConfiguration{MachineHealthTimeout: &v1alpha1.Duration{Duration: time.Second}},
		},
	}
	// The deployment only carries the limit; no controller runs it.
	require.NoError(t, env.Client.Create(w.ctx, &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "md2"},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: 6, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template,
		},
	}))
	w.configure = func(r *Reconciler, cached client.Client) {
		r.Meltdown = meltdown.NewGuard(cached, intstr.FromInt32(2))
	}
	w.start()
	setMgr := controllertest.NewManager(t, env.Config, env.Scheme)
	setOpts := machineset.DefaultOptions()
	setOpts.NewMachineFinalizers = []string{v1alpha1.MachineFinalizer}
	require.NoError(t, (&machineset.Reconciler{Options: setOpts}).SetupWithManager(setMgr, setup.Env{Workers: 2}))
	controllertest.Start(t, setMgr)
	require.NoError(t, env.Client.Create(w.ctx, &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "rs"},
		Spec:       v1alpha1.MachineSetSpec{Replicas: 6, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}))

	available := func() (names []string) {
		list := &v1alpha1.MachineList{}
		require.NoError(t, env.Client.List(w.ctx, list, client.InNamespace(w.ns)))
		for _, m := range list.Items {
			if m.DeletionTimestamp == nil && m.Status.CurrentStatus.Phase == v1alpha1.MachineAvailable {
				names = append(names, m.Name)
			}
		}
		return names
	}
	var first []string
	require.Eventually(t, func() bool { first = available(); return len(first) == 6 }, waitLong, 50*time.Millisecond)

	rw := watchReplacing(t, w.ctx, env, w.ns)
	for _, name := range first {
		w.deleteVM(name)
	}
	require.Eventually(t, func() bool {
		now := available()
		for _, name := range now {
			if slices.Contains(first, name) {
				return false
			}
		}
		return len(now) == 6 && len(w.mem.VMs()) == 6
	}, 2*waitLong, 100*time.Millisecond, "the set never had six new Available machines")
	for _, name := range first {
		w.waitGone(name, waitLong)
		assert.Contains(t, w.rec.phasesOf(name), string(v1alpha1.MachineFailed), name)
	}
	most, which := rw.highest()
	assert.LessOrEqual(t, most, 2, "machines being replaced at one moment: %s", which)
}

// The driver answers UNAVAILABLE, then INTERNAL, to every GetMachineStatus
// for longer than the health timeout: nothing is known about the VM, and
// the machine stays Available (with a VMCheckFailed event). Once the
// driver answers again and the VM is gone, the machine fails by the health
// path.
func testVMCheckTransientErrors(t *testing.T, env *testenv.Env) {
	w := vmCheckWorld(t, env, 100*time.Millisecond)
	w.start()
	w.machine("t1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineHealthTimeout: &v1alpha1.Duration{Duration: 500 * time.Millisecond}}
	})
	w.waitPhase("t1", v1alpha1.MachineAvailable, waitLong)

	for _, code := range []codes.Code{codes.Unavailable, codes.Internal} {
		w.mem.SetFault(inmemory.MethodGetMachineStatus, inmemory.Fault{Code: code})
		before, start := w.mem.Calls(inmemory.MethodGetMachineStatus), time.Now()
		// Failed checks over four health timeouts (retry after 100ms for
		// UNAVAILABLE, 1s for INTERNAL).
		require.Eventually(t, func() bool {
			return time.Since(start) > 2*time.Second && w.mem.Calls(inmemory.MethodGetMachineStatus) >= before+2
		}, waitLong, 50*time.Millisecond, "the VM is checked while the driver fails")
		m := w.get("t1")
		assert.Equal(t, v1alpha1.MachineAvailable, m.Status.CurrentStatus.Phase, "a %s from the driver fails no machine", code)
		assert.Nil(t, m.Status.UnhealthySince)
		w.waitEvent("t1", corev1.EventTypeWarning, reasonVMCheckFailed)
	}
	w.mem.ClearFaults()

	w.deleteVM("t1")
	m := w.waitPhase("t1", v1alpha1.MachineFailed, waitLong)
	assert.Contains(t, m.Status.LastOperation.Description, "does not find VM")
	w.rec.assertPhases(t, "t1", []string{"", "Available", "Unknown", "Failed"})
}

// Twenty machines due every 50ms with at most 10 checks a second: the
// driver never sees more than the limiter allows in any second, and every
// machine is still checked.
func testVMCheckPaced(t *testing.T, env *testenv.Env) {
	w := vmCheckWorld(t, env, 50*time.Millisecond)
	w.opts.VMStatusCheckRate = 10
	w.start()
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("p%d", i))
		w.machine(names[i], "small")
	}
	for _, name := range names {
		w.waitPhase(name, v1alpha1.MachineAvailable, waitLong)
	}
	start := time.Now()
	require.Eventually(t, func() bool { return time.Since(start) > 3*time.Second }, waitLong, 100*time.Millisecond)
	var checks []time.Time
	for _, c := range w.drv.callTimes(inmemory.MethodGetMachineStatus) {
		if c.After(start) {
			checks = append(checks, c)
		}
	}
	// Unpaced, 20 machines every 50ms would be 400 calls a second.
	require.NotEmpty(t, checks)
	for i, c := range checks {
		inSecond := 0
		for _, d := range checks[i:] {
			if d.Sub(c) < time.Second {
				inSecond++
			}
		}
		require.LessOrEqual(t, inSecond, 10+10, "calls in the second from %s (rate 10/s, burst 10)", c.Format(time.StampMilli))
	}
	assert.GreaterOrEqual(t, len(checks), 20, "the limiter paces the checks without stopping them")
	for _, name := range names {
		assert.Equal(t, v1alpha1.MachineAvailable, w.get(name).Status.CurrentStatus.Phase)
	}
}
