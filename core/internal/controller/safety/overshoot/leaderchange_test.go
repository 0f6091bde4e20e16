package overshoot_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/machinedeployment"
	"github.com/machina-io/machina/core/internal/controller/machineset"
	"github.com/machina-io/machina/core/internal/controller/safety/overshoot"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// A leadership change builds every controller anew, the overshoot check
// included: whatever it kept in memory is gone. The chaos suite saw a new
// leader freeze a set of 45 machines whose deployment had been scaled to 0
// while no replica led ("45 machines, at or above its limit of 2"): the
// check had no previous count and took the whole set for growth. These
// tests run the real MachineDeployment and MachineSet controllers in one
// manager (the leader's) and the check in managers of its own, stopped and
// started fresh as a new leader's would be.
func TestOvershootAcrossLeaderChanges(t *testing.T) {
	env := testenv.Start(t)

	t.Run("a scale-down survives fresh checkers started before and during it", func(t *testing.T) {
		testScaleDownAcrossLeaders(t, env)
	})
	t.Run("a runaway set is frozen by a fresh checker", func(t *testing.T) {
		testRunawayAcrossLeaders(t, env)
	})
}

// leader is the set of controllers one leadership term runs.
type leader struct {
	t   *testing.T
	env *testenv.Env
}

// controllers starts the MachineDeployment and MachineSet controllers;
// machines get holdFinalizer, so that deleted ones stay as while the Machine
// controller drains them. The set has at most burst deletions in flight.
func (l leader) controllers(burst int) (stop func()) {
	mgr := controllertest.NewManager(l.t, l.env.Config, l.env.Scheme)
	setOpts := machineset.DefaultOptions()
	setOpts.NewMachineFinalizers = []string{holdFinalizer}
	setOpts.BurstReplicas = burst
	require.NoError(l.t, (&machineset.Reconciler{Options: setOpts}).SetupWithManager(mgr, setup.Env{Workers: 2}))
	require.NoError(l.t, (&machinedeployment.Reconciler{Options: machinedeployment.DefaultOptions()}).SetupWithManager(mgr, setup.Env{Workers: 2}))
	return controllertest.Start(l.t, mgr)
}

// checker starts a fresh overshoot check with the default safety margins.
func (l leader) checker() (stop func()) {
	mgr := controllertest.NewManager(l.t, l.env.Config, l.env.Scheme)
	require.NoError(l.t, (&overshoot.Reconciler{SafetyUp: 2, SafetyDown: 1, Period: period}).SetupWithManager(mgr, setup.Env{Workers: 2}))
	return controllertest.Start(l.t, mgr)
}

func testScaleDownAcrossLeaders(t *testing.T, env *testenv.Env) {
	const replicas, burst = 30, 10
	l := leader{t: t, env: env}
	f := &fixture{t: t, c: env.Client, ns: controllertest.Namespace(t, env.Client, "leaders")}
	frozenSeen := watchFreezes(t, env, f.ns)

	controllers, check := l.controllers(burst), l.checker()
	md := f.deployment("big", replicas, intstr.FromString("25%")) // higher at 0 replicas: 0 + 0 + 2
	ms := f.settledSet(md, replicas)

	// The leader dies; the deployment is scaled to 0 before another leads.
	controllers()
	check()
	f.scale(md, 0)

	// The new leader's check runs before its MachineDeployment controller
	// has scaled the set: 30 machines against a limit of 2.
	check = l.checker()
	f.wait(quiet)
	require.Empty(t, frozenSeen(), "a fresh check froze a set whose deployment was scaled down")

	// Its controllers scale the set down, at most 10 deletions at a time; another
	// fresh check starts once the first machines are being deleted.
	controllers = l.controllers(burst)
	require.Eventually(t, func() bool { live, _ := f.count(ms); return live < replicas },
		controllertest.WaitFor, controllertest.Tick, "the set never started to scale down")
	check()
	check = l.checker()
	require.Eventually(t, func() bool { live, deleting := f.count(ms); return live == 0 && deleting == replicas },
		controllertest.WaitFor, controllertest.Tick, "the set never marked all %d machines for deletion", replicas)

	// And once more with every machine being deleted.
	check()
	l.checker()
	f.wait(quiet)
	controllers()
	f.release(ms)

	assert.Empty(t, frozenSeen(), "sets seen frozen during the scale-down")
	f.requireNoFreezeEvents()
}

func testRunawayAcrossLeaders(t *testing.T, env *testenv.Env) {
	ctx := context.Background()
	l := leader{t: t, env: env}
	f := &fixture{t: t, c: env.Client, ns: controllertest.Namespace(t, env.Client, "runaway")}

	controllers, check := l.controllers(100), l.checker()
	md := f.deployment("run", 3, intstr.FromInt32(1)) // higher = 3 + 1 + 2 = 6
	ms := f.settledSet(md, 3)

	// The leader dies with creations in flight that its stale view made
	// twice: three machines beyond the set's replicas, which its status
	// does not count either.
	controllers()
	check()
	f.machines(ms, 3)

	l.checker()
	f.requireFrozen(ms, true)
	f.requireDeploymentFrozen(md, true)
	f.requireEvents(ms, overshoot.ReasonFrozeMachineSet, 1)
	assert.Contains(t, f.setCondition(ms).Message, "6 machines, at or above its limit of 6 and more than the 3")

	// Once the surplus goes, the set thaws.
	machines := &v1alpha1.MachineList{}
	require.NoError(t, f.c.List(ctx, machines, client.InNamespace(f.ns)))
	require.NoError(t, f.c.Delete(ctx, &machines.Items[0]))
	f.release(ms)
	f.requireFrozen(ms, false)
	f.requireDeploymentFrozen(md, false)
}

// settledSet waits until md has its one set with n machines and the set's
// status counts them at its current generation, and returns the set.
func (f *fixture) settledSet(md *v1alpha1.MachineDeployment, n int32) *v1alpha1.MachineSet {
	f.t.Helper()
	var ms *v1alpha1.MachineSet
	require.Eventually(f.t, func() bool {
		list := &v1alpha1.MachineSetList{}
		require.NoError(f.t, f.c.List(context.Background(), list, client.InNamespace(f.ns)))
		if len(list.Items) != 1 {
			return false
		}
		ms = &list.Items[0]
		live, _ := f.count(ms)
		return live == int(n) && ms.Status.Replicas == n && ms.Status.ObservedGeneration == ms.Generation
	}, 2*controllertest.WaitFor, 100*time.Millisecond, "deployment %s never had a settled set of %d machines", md.Name, n)
	return ms
}

func (f *fixture) scale(md *v1alpha1.MachineDeployment, replicas int32) {
	f.t.Helper()
	require.NoError(f.t, f.c.Get(context.Background(), client.ObjectKeyFromObject(md), md))
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = replicas
	require.NoError(f.t, f.c.Patch(context.Background(), md, patch))
}

// count counts the machines ms controls, live and being deleted.
func (f *fixture) count(ms *v1alpha1.MachineSet) (live, deleting int) {
	f.t.Helper()
	list := &v1alpha1.MachineList{}
	require.NoError(f.t, f.c.List(context.Background(), list, client.InNamespace(f.ns)))
	for _, m := range list.Items {
		if owner := metav1.GetControllerOf(&m); owner == nil || owner.UID != ms.UID {
			continue
		}
		if m.DeletionTimestamp == nil {
			live++
		} else {
			deleting++
		}
	}
	return live, deleting
}

// release removes holdFinalizer from the machines being deleted and waits
// until they are gone.
func (f *fixture) release(ms *v1alpha1.MachineSet) {
	f.t.Helper()
	ctx := context.Background()
	list := &v1alpha1.MachineList{}
	require.NoError(f.t, f.c.List(ctx, list, client.InNamespace(f.ns)))
	for i := range list.Items {
		m := &list.Items[i]
		if m.DeletionTimestamp == nil {
			continue
		}
		patch := client.MergeFrom(m.DeepCopy())
		controllerutil.RemoveFinalizer(m, holdFinalizer)
		require.NoError(f.t, f.c.Patch(ctx, m, patch))
	}
	require.Eventually(f.t, func() bool { _, deleting := f.count(ms); return deleting == 0 },
		controllertest.WaitFor, controllertest.Tick, "the deleted machines never went")
}

// wait lets d pass: several periods of the check, watching for what must
// not happen.
func (f *fixture) wait(d time.Duration) {
	deadline := time.Now().Add(d)
	require.Eventually(f.t, func() bool { return time.Now().After(deadline) }, d+controllertest.WaitFor, controllertest.Tick)
}

func (f *fixture) requireNoFreezeEvents() {
	f.t.Helper()
	events := &corev1.EventList{}
	require.NoError(f.t, f.c.List(context.Background(), events, client.InNamespace(f.ns)))
	for _, e := range events.Items {
		assert.NotEqual(f.t, overshoot.ReasonFrozeMachineSet, e.Reason, "event: %s", e.Message)
	}
}

// The MachineSet controller writes status.replicas from its list before the
// sync's creations: right after a scale-up its status counts none of the new
// machines. A deployment scaled down again before the set's next sync
// leaves the set with machines neither its spec nor its status accounts for,
// until the set has synced its new spec (observedGeneration). The status is
// written here as that controller writes it.
func TestOvershootWaitsForTheSetToActOnItsSpec(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	f := start(t, env, 2, 1)
	frozenSeen := watchFreezes(t, env, f.ns)
	md := f.deployment("bounce", 20, intstr.FromInt32(1))
	ms := f.machineSet("bounce-abc", 20, md)
	f.writeStatus(ms, 0) // the sync that created the 20 machines below
	created := f.machines(ms, 20)
	for _, m := range created {
		require.NoError(t, f.c.Get(ctx, client.ObjectKeyFromObject(m), m))
		controllerutil.AddFinalizer(m, holdFinalizer)
		require.NoError(t, f.c.Update(ctx, m))
	}
	f.wait(quiet)

	// Scaled back to 0: the limit is 0 + 1 + 2, the set's spec 0, its
	// status 0, and 20 live machines, but the set has not synced yet.
	f.scale(md, 0)
	require.NoError(t, f.c.Get(ctx, client.ObjectKeyFromObject(ms), ms))
	patch := client.MergeFrom(ms.DeepCopy())
	ms.Spec.Replicas = 0
	require.NoError(t, f.c.Patch(ctx, ms, patch))
	f.wait(quiet)
	require.Empty(t, frozenSeen(), "a set frozen before it acted on its scale-down")

	// Its sync deletes the 20 machines, then writes its status.
	for _, m := range created {
		require.NoError(t, f.c.Delete(ctx, m))
	}
	f.writeStatus(ms, 0)
	f.wait(quiet)
	f.release(ms)
	assert.Empty(t, frozenSeen(), "sets seen frozen")

	// The same set, synced, that then gets machines nobody asked for does
	// freeze: limit 3, spec 0, status 0.
	f.machines(ms, 3)
	f.requireFrozen(ms, true)
}

// writeStatus writes ms's status as the MachineSet controller does at the
// end of a sync: replicas and the generation it acted on.
func (f *fixture) writeStatus(ms *v1alpha1.MachineSet, replicas int32) {
	f.t.Helper()
	require.NoError(f.t, f.c.Get(context.Background(), client.ObjectKeyFromObject(ms), ms))
	patch := client.MergeFrom(ms.DeepCopy())
	ms.Status.Replicas = replicas
	ms.Status.ObservedGeneration = ms.Generation
	require.NoError(f.t, f.c.Status().Patch(context.Background(), ms, patch))
}
