package overshoot_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
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

// holdFinalizer keeps deleted machines around, as the Machine controller's
// finalizer does while it drains a node and deletes a VM.
const holdFinalizer = "test.machina.io/hold"

func TestOvershootCountsOnlyLiveMachines(t *testing.T) {
	env := testenv.Start(t)

	t.Run("machines being deleted do not count toward the limit; live ones do", func(t *testing.T) {
		f := start(t, env, 2, 1)
		ms := f.machineSet("draining", 1, nil) // higher 4, lower 3
		leaving := f.machines(ms, 3)
		for _, m := range leaving {
			require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(m), m))
			controllerutil.AddFinalizer(m, holdFinalizer)
			require.NoError(t, f.c.Update(context.Background(), m))
			require.NoError(t, f.c.Delete(context.Background(), m))
		}
		f.machines(ms, 3) // 6 machines, 3 of them being deleted
		f.requireStays(ms, false)

		f.machines(ms, 1) // 4 live: an overshoot
		f.requireFrozen(ms, true)
		f.requireEvents(ms, overshoot.ReasonFrozeMachineSet, 1)

		// As in MCM, the set thaws only once its surplus is gone, being
		// deleted or not: 7 machines, then 4 once the three leave.
		for _, m := range leaving {
			require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(m), m))
			controllerutil.RemoveFinalizer(m, holdFinalizer)
			require.NoError(t, f.c.Update(context.Background(), m))
		}
		f.requireStays(ms, true)
	})

	t.Run("preserved Failed machines do not count", func(t *testing.T) {
		f := start(t, env, 2, 1)
		ms := f.machineSet("preserving", 1, nil) // higher 4, lower 3
		machines := f.machines(ms, 4)
		f.requireFrozen(ms, true)
		// Two of them Failed and preserved: 2 left that count, below lower.
		until := metav1.NewTime(time.Now().Add(time.Hour))
		for _, m := range machines[:2] {
			require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(m), m))
			m.Status.CurrentStatus.Phase = v1alpha1.MachineFailed
			m.Status.CurrentStatus.PreserveExpiryTime = &until
			require.NoError(t, f.c.Status().Update(context.Background(), m))
		}
		f.requireFrozen(ms, false)
	})

	t.Run("a MachineDeployment scaled from 150 to 0 never freezes its set", func(t *testing.T) {
		testScaleDown150To0(t, env)
	})
}

// The real MachineDeployment and MachineSet controllers run with the
// overshoot check. The deployment goes from 150 machines to 0; every
// machine keeps a finalizer, so for a while all 150 are being deleted at
// once, as when the Machine controller drains them. No set may freeze at
// any moment: no freeze label in any watch event of the sets, no
// FrozeMachineSet event.
func testScaleDown150To0(t *testing.T, env *testenv.Env) {
	const replicas = 150
	mgr := controllertest.NewManager(t, env.Config, env.Scheme)
	require.NoError(t, (&overshoot.Reconciler{SafetyUp: 2, SafetyDown: 1, Period: period}).SetupWithManager(mgr, setup.Env{Workers: 2}))
	setOpts := machineset.DefaultOptions()
	setOpts.NewMachineFinalizers = []string{holdFinalizer}
	require.NoError(t, (&machineset.Reconciler{Options: setOpts}).SetupWithManager(mgr, setup.Env{Workers: 2}))
	require.NoError(t, (&machinedeployment.Reconciler{Options: machinedeployment.DefaultOptions()}).SetupWithManager(mgr, setup.Env{Workers: 2}))
	controllertest.Start(t, mgr)
	f := &fixture{t: t, c: env.Client, ns: controllertest.Namespace(t, env.Client, "scaledown")}
	ctx := context.Background()

	frozenSeen := watchFreezes(t, env, f.ns)
	md := f.deployment("big", replicas, intstr.FromString("25%"))
	machines := func() (live, deleting int) {
		list := &v1alpha1.MachineList{}
		require.NoError(t, f.c.List(ctx, list, client.InNamespace(f.ns)))
		for _, m := range list.Items {
			if m.DeletionTimestamp == nil {
				live++
			} else {
				deleting++
			}
		}
		return live, deleting
	}
	require.Eventually(t, func() bool { live, _ := machines(); return live == replicas },
		2*controllertest.WaitFor, 100*time.Millisecond, "the deployment never had %d machines", replicas)

	require.NoError(t, f.c.Get(ctx, client.ObjectKeyFromObject(md), md))
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Replicas = 0
	require.NoError(t, f.c.Patch(ctx, md, patch))
	require.Eventually(t, func() bool { live, deleting := machines(); return live == 0 && deleting == replicas },
		2*controllertest.WaitFor, 100*time.Millisecond, "the set never marked all %d machines for deletion", replicas)
	// Several periods of the check with every machine being deleted.
	deadline := time.Now().Add(quiet)
	require.Eventually(t, func() bool { return time.Now().After(deadline) }, controllertest.WaitFor, controllertest.Tick)

	list := &v1alpha1.MachineList{}
	require.NoError(t, f.c.List(ctx, list, client.InNamespace(f.ns)))
	for i := range list.Items {
		m := &list.Items[i]
		patch := client.MergeFrom(m.DeepCopy())
		controllerutil.RemoveFinalizer(m, holdFinalizer)
		require.NoError(t, f.c.Patch(ctx, m, patch))
	}
	require.Eventually(t, func() bool { live, deleting := machines(); return live+deleting == 0 },
		controllertest.WaitFor, 100*time.Millisecond, "the machines never went")

	assert.Empty(t, frozenSeen(), "sets seen frozen during the scale-down")
	events := &corev1.EventList{}
	require.NoError(t, f.c.List(ctx, events, client.InNamespace(f.ns)))
	for _, e := range events.Items {
		assert.NotEqual(t, overshoot.ReasonFrozeMachineSet, e.Reason, "event: %s", e.Message)
	}
}

// watchFreezes watches the MachineSets of ns from now on and returns a
// function that lists every set seen with the freeze label.
func watchFreezes(t *testing.T, env *testenv.Env, ns string) func() []string {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	wi, err := wc.Watch(ctx, &v1alpha1.MachineSetList{}, client.InNamespace(ns))
	require.NoError(t, err)
	var mu sync.Mutex
	var frozen []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			ms, ok := ev.Object.(*v1alpha1.MachineSet)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			if ms.Labels[v1alpha1.FreezeLabel] == v1alpha1.FreezeValue {
				mu.Lock()
				frozen = append(frozen, ms.Name+" at "+metav1.Now().Format(time.StampMilli))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), frozen...)
	}
}
