package classupdate

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// One API server for all the cases; each runs in its own namespace with its
// own driver and manager.
func TestClassUpdate(t *testing.T) {
	env := testenv.Start(t)
	t.Run("tag change reaches every VM", func(t *testing.T) { testTagChange(t, env) })
	t.Run("partial refusal", func(t *testing.T) { testPartialRefusal(t, env) })
	t.Run("driver errors", func(t *testing.T) { testDriverErrors(t, env) })
	t.Run("a machine changed while its call ran", func(t *testing.T) { testChangedDuringCall(t, env) })
	t.Run("manager restart mid-way", func(t *testing.T) { testRestart(t, env) })
	t.Run("budget", func(t *testing.T) { testBudget(t, env) })
	t.Run("a slow call holds only its own slot", func(t *testing.T) { testSlowCall(t, env) })
	t.Run("driver without the capability", func(t *testing.T) { testWithoutCapability(t, env) })
}

const (
	specA     = `{"capacity":{"cpu":"2"},"image":"img-1","tags":{"team":"a"}}`
	specB     = `{"capacity":{"cpu":"2"},"image":"img-1","tags":{"team":"b"},"labels":{"tier":"web"}}`
	specImage = `{"capacity":{"cpu":"2"},"image":"img-2","tags":{"team":"a"}}`
)

// testTagChange is the "done means": a tag-like change of a class
// updates every existing machine's VM through UpdateMachine, without a new
// VM, visible in the driver's state and the Machines' status.
func testTagChange(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, inmemory.Options{})
	w.start()
	class := w.createClass("tagged", specA)
	hashA := hashOf(t, class)
	ms := names("m", 3)
	w.createMachines(class.Name, hashA, ms...)
	before := map[string]inmemory.VM{}
	for _, n := range ms {
		before[n] = w.vm(n)
	}

	hashB := w.setSpec(class, specB)
	require.NotEqual(t, hashA, hashB)
	for _, n := range ms {
		m := w.waitMachine(n, "the class update applied", appliedTo(hashB))
		assert.Equal(t, before[n].ProviderID, m.Spec.ProviderID, "the same VM")
		assert.NotContains(t, m.Annotations, v1alpha1.ClassHashNeedsNewVMAnnotation)
		vm := w.vm(n)
		assert.Equal(t, before[n].ProviderID, vm.ProviderID, "no new VM")
		assert.Equal(t, before[n].Created, vm.Created)
		assert.Equal(t, 1, vm.Updates)
		assert.JSONEq(t, specB, string(vm.ProviderSpec), "the VM has the new tags")
		controllertest.RequireEvent(t, env.Client, m, "ClassUpdated", shortHash(hashB))
	}
	assert.Len(t, w.mem.VMs(), len(ms), "no VM created or deleted")
	assert.Equal(t, len(ms), w.mem.Calls(inmemory.MethodCreateMachine))
	assert.Equal(t, len(ms), w.mem.Calls(inmemory.MethodUpdateMachine), "one call per machine")
}

// testPartialRefusal: machines whose VM can take the change are updated,
// one whose VM cannot (made from older contents with another image) is left
// untouched, at its old hash, with a condition and an event that say so.
func testPartialRefusal(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, inmemory.Options{})
	w.start()
	class := w.createClass("mixed", specImage)
	hashOld := hashOf(t, class)
	w.createMachines(class.Name, hashOld, "old")
	oldVM := w.vm("old")

	// The image changes: the old machine's VM cannot take it.
	hashA := w.setSpec(class, specA)
	old := w.waitMachine("old", "a NeedsNewVM condition", func(m *v1alpha1.Machine) bool {
		c := classUpdated(m)
		return c != nil && c.Reason == ReasonNeedsNewVM && m.Annotations[v1alpha1.ClassHashNeedsNewVMAnnotation] == hashA
	})
	assert.Equal(t, hashOld, old.Annotations[v1alpha1.ClassHashAnnotation])
	assert.Equal(t, metav1.ConditionFalse, classUpdated(old).Status)
	assert.Contains(t, classUpdated(old).Message, "image")
	controllertest.RequireEvent(t, env.Client, old, "ClassUpdateNeedsNewVM", "cannot change on a running VM")

	// New machines come with the class as it is now; then tags change.
	fresh := names("new", 2)
	w.createMachines(class.Name, hashA, fresh...)
	hashB := w.setSpec(class, specB)
	for _, n := range fresh {
		w.waitMachine(n, "the class update applied", appliedTo(hashB))
		assert.Equal(t, 1, w.vm(n).Updates)
	}
	old = w.waitMachine("old", "a refusal of the tag change too", func(m *v1alpha1.Machine) bool {
		return m.Annotations[v1alpha1.ClassHashNeedsNewVMAnnotation] == hashB
	})
	assert.Equal(t, hashOld, old.Annotations[v1alpha1.ClassHashAnnotation], "still made from its old contents")
	assert.Equal(t, ReasonNeedsNewVM, classUpdated(old).Reason)
	assert.Equal(t, oldVM, w.vm("old"), "the refused VM is untouched")
	assert.Len(t, w.mem.VMs(), 3, "no VM created or deleted")
	// Each machine was asked once per class change it did not have.
	assert.Equal(t, 4, w.mem.Calls(inmemory.MethodUpdateMachine))
}

// testChangedDuringCall: a machine written while its UpdateMachine call ran
// makes the record of the answer conflict; the answer is written on a fresh
// read, and the driver is not asked again.
func testChangedDuringCall(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, inmemory.Options{})
	w.start()
	class := w.createClass("changed", specA)
	w.createMachines(class.Name, hashOf(t, class), "c-0")

	w.drv.hold("c-0")
	hashB := w.setSpec(class, specB)
	require.Eventually(t, func() bool { return w.drv.inFlight.Load() == 1 }, 30*time.Second, 10*time.Millisecond,
		"the call for c-0 started")
	m := w.machine("c-0")
	p := client.MergeFrom(m.DeepCopy())
	m.Labels = map[string]string{"touched": "during-the-call"}
	require.NoError(t, env.Client.Patch(w.ctx, m, p))
	w.drv.unhold()

	got := w.waitMachine("c-0", "the class update applied", appliedTo(hashB))
	assert.Equal(t, "during-the-call", got.Labels["touched"], "the other writer's change is kept")
	assert.Equal(t, 1, w.mem.Calls(inmemory.MethodUpdateMachine), "the answer is recorded without a second call")
}

// testDriverErrors: a failing call is recorded (condition, event) and
// retried after the period of its code; a transient failure soon.
func testDriverErrors(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, inmemory.Options{})
	w.start()
	class := w.createClass("failing", specA)
	hashA := hashOf(t, class)
	w.createMachines(class.Name, hashA, "f-0")

	w.mem.SetFault(inmemory.MethodUpdateMachine, inmemory.Fault{Code: codes.PermissionDenied, Message: "not allowed to tag", Count: 1})
	hashB := w.setSpec(class, specB)
	failed := w.waitMachine("f-0", "an UpdateFailed condition", func(m *v1alpha1.Machine) bool {
		c := classUpdated(m)
		return c != nil && c.Reason == ReasonUpdateFailed
	})
	assert.Contains(t, classUpdated(failed).Message, "PermissionDenied: not allowed to tag")
	assert.Equal(t, hashA, failed.Annotations[v1alpha1.ClassHashAnnotation], "not moved on a failure")
	controllertest.RequireEvent(t, env.Client, failed, "ClassUpdateFailed", "PermissionDenied")
	// Retried after the medium period, and applied then.
	w.waitMachine("f-0", "the class update applied after the retry", appliedTo(hashB))
	assert.Equal(t, 2, w.mem.Calls(inmemory.MethodUpdateMachine))

	// Transient failures, retried after the short period.
	w.mem.SetFault(inmemory.MethodUpdateMachine, inmemory.Fault{Code: codes.Unavailable, Count: 3})
	hashA2 := w.setSpec(class, specA)
	w.waitMachine("f-0", "the class update applied after transient failures", appliedTo(hashA2))
	assert.Equal(t, 2+4, w.mem.Calls(inmemory.MethodUpdateMachine))
	assert.Equal(t, 2, w.vm("f-0").Updates)
}

// testRestart: the manager stops while calls are held in the driver; a new
// manager completes the update, each VM updated exactly once.
func testRestart(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, inmemory.Options{})
	w.opts.MaxConcurrent = 1
	w.start()
	class := w.createClass("restarted", specA)
	hashA := hashOf(t, class)
	ms := names("r", 4)
	w.createMachines(class.Name, hashA, ms...)

	// The first machine goes through; the others' calls hang in the driver.
	w.drv.hold(ms[1:]...)
	hashB := w.setSpec(class, specB)
	w.waitMachine(ms[0], "the class update applied", appliedTo(hashB))
	require.Eventually(t, func() bool { return w.drv.inFlight.Load() == 1 }, controllertest.WaitFor, controllertest.Tick, "a held call")
	w.stopMgr()
	require.Eventually(t, func() bool { return w.drv.inFlight.Load() == 0 }, controllertest.WaitFor, controllertest.Tick, "the held call ends with the manager")
	for _, n := range ms[1:] {
		assert.Equal(t, hashA, w.machine(n).Annotations[v1alpha1.ClassHashAnnotation], "%s not updated yet", n)
		assert.Zero(t, w.vm(n).Updates)
	}

	w.drv.unhold()
	w.start()
	for _, n := range ms {
		w.waitMachine(n, "the class update applied", appliedTo(hashB))
		assert.Equal(t, 1, w.vm(n).Updates, "%s updated once", n)
	}
	assert.Len(t, w.mem.VMs(), len(ms))
	assert.EqualValues(t, 1, w.drv.maxInFlight.Load(), "one machine at a time")
}

// testBudget: no more than MaxConcurrent calls are in flight for a class.
func testBudget(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, inmemory.Options{})
	w.opts.MaxConcurrent = 2
	w.start()
	class := w.createClass("budget", specA)
	hashA := hashOf(t, class)
	ms := names("b", 5)
	w.createMachines(class.Name, hashA, ms...)

	w.drv.hold()
	hashB := w.setSpec(class, specB)
	require.Eventually(t, func() bool { return w.drv.inFlight.Load() == 2 }, controllertest.WaitFor, controllertest.Tick, "two calls in flight")
	w.drv.unhold()
	for _, n := range ms {
		w.waitMachine(n, "the class update applied", appliedTo(hashB))
	}
	assert.EqualValues(t, 2, w.drv.maxInFlight.Load())
	assert.Equal(t, len(ms), w.mem.Calls(inmemory.MethodUpdateMachine))
}

// testSlowCall: a call that does not come back holds one slot of the
// budget, not the class: the other machines go through the other slot.
func testSlowCall(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, inmemory.Options{})
	w.opts.MaxConcurrent = 2
	w.start()
	class := w.createClass("slow", specA)
	hashA := hashOf(t, class)
	ms := names("s", 5)
	w.createMachines(class.Name, hashA, ms...)

	w.drv.hold(ms[0])
	hashB := w.setSpec(class, specB)
	for _, n := range ms[1:] {
		w.waitMachine(n, "the class update applied while "+ms[0]+"'s call hangs", appliedTo(hashB))
	}
	assert.EqualValues(t, 1, w.drv.inFlight.Load(), "the held call is still in flight")
	assert.Equal(t, hashA, w.machine(ms[0]).Annotations[v1alpha1.ClassHashAnnotation])
	w.drv.unhold()
	w.waitMachine(ms[0], "the class update applied once released", appliedTo(hashB))
	assert.LessOrEqual(t, w.drv.maxInFlight.Load(), int32(2))
	assert.Equal(t, len(ms), w.mem.Calls(inmemory.MethodUpdateMachine))
}

// testWithoutCapability: a driver that does not advertise UpdateMachine is
// never called; its machines keep their VMs and records as before.
func testWithoutCapability(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, inmemory.Options{DisabledCapabilities: []driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_UPDATE_MACHINE}})
	w.start()
	class := w.createClass("plain", specA)
	hashA := hashOf(t, class)
	w.createMachines(class.Name, hashA, "p-0")

	hashB := w.setSpec(class, specB)
	// The controller saw the change (it keeps a snapshot of every
	// contents), and called nothing.
	w.waitSnapshot(class.Name, hashB)
	hashC := w.setSpec(class, specImage)
	w.waitSnapshot(class.Name, hashC)
	m := w.machine("p-0")
	assert.Equal(t, hashA, m.Annotations[v1alpha1.ClassHashAnnotation])
	assert.Nil(t, classUpdated(m))
	assert.Zero(t, w.mem.Calls(inmemory.MethodUpdateMachine))
	assert.Zero(t, w.vm("p-0").Updates)
}
