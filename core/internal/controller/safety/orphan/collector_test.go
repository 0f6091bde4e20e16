package orphan_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/safety/orphan"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// scanPeriod is the period of collectors that run as Runnables in tests.
const scanPeriod = 30 * time.Millisecond

func TestOrphanCollector(t *testing.T) {
	env := testenv.Start(t)

	t.Run("deletes only true orphans, and only on the second consecutive scan", func(t *testing.T) {
		ctx := context.Background()
		f := newFixture(t, env, inmemory.Options{})
		mgr := controllertest.NewManager(t, env.Config, env.Scheme)
		controllertest.Start(t, mgr)

		f.liveMachine("live-1")
		f.liveMachine("live-2")
		f.vm("creating") // the create reached the driver; no provider ID recorded yet
		f.machine("creating", "", "")
		f.vm("crashing")
		f.machine("crashing", "", v1alpha1.MachineCrashLoopBackOff)
		f.vm("pending")
		f.machine("pending", "", v1alpha1.MachinePending)
		dupID := f.vm("dup") // its Machine records another VM
		f.machine("dup", "inmemory:///"+f.ns+"/dup/stale", v1alpha1.MachineRunning)
		ghostID := f.vm("ghost")     // no Machine at all
		adoptedID := f.vm("adopted") // no Machine until after the first scan
		f.waitCached(mgr, 6)

		col := f.collector(mgr, nil)
		r1 := col.Scan(ctx)
		require.NoError(t, r1.Err)
		assert.Equal(t, 1, r1.Classes)
		assert.Equal(t, 3, r1.Candidates, "dup, ghost and adopted are candidates")
		assert.Empty(t, r1.Deleted, "the first sighting deletes nothing")
		assert.Zero(t, f.deleteCalls())
		assert.Len(t, f.vmNames(), 8)

		// Between the scans a Machine takes over "adopted" (as when the
		// machine controller adopts an existing VM).
		f.machine("adopted", adoptedID, v1alpha1.MachinePending)

		r2 := col.Scan(ctx)
		require.NoError(t, r2.Err)
		assert.ElementsMatch(t, []string{dupID, ghostID}, r2.Deleted)
		assert.Equal(t, []string{"adopted", "crashing", "creating", "live-1", "live-2", "pending"}, f.vmNames())
		assert.Equal(t, 2, f.deleteCalls())
		assert.Equal(t, 2.0, f.deletedMetric())
		require.Eventually(t, func() bool { return len(f.orphanEvents()) == 2 }, controllertest.WaitFor, controllertest.Tick)
		assert.Contains(t, f.orphanEvents(), "Deleted orphan VM "+ghostID+` of machine ghost: no Machine "ghost" exists`)
		for _, note := range f.orphanEvents() {
			assert.NotContains(t, note, "s3cr3t", "events must not carry secrets")
		}

		r3 := col.Scan(ctx)
		require.NoError(t, r3.Err)
		assert.Zero(t, r3.Candidates)
		assert.Empty(t, r3.Deleted)
		assert.Equal(t, 2, f.deleteCalls())
		assert.True(t, f.hasVM("live-1"))
	})

	t.Run("a failed ListMachines forgets the class's candidates", func(t *testing.T) {
		ctx := context.Background()
		f := newFixture(t, env, inmemory.Options{})
		mgr := controllertest.NewManager(t, env.Config, env.Scheme)
		controllertest.Start(t, mgr)
		f.liveMachine("live")
		f.vm("ghost")
		f.waitCached(mgr, 1)
		col := f.collector(mgr, nil)

		r := col.Scan(ctx)
		require.NoError(t, r.Err)
		require.Equal(t, 1, r.Candidates)

		f.drv.VMs.SetFault(inmemory.MethodListMachines, inmemory.Fault{Code: codes.Unavailable, Count: 1})
		r = col.Scan(ctx)
		require.NoError(t, r.Err)
		assert.Equal(t, 1, r.Skipped)
		assert.Zero(t, r.Classes)

		// The listing works again, but the earlier sighting no longer counts.
		r = col.Scan(ctx)
		require.NoError(t, r.Err)
		assert.Empty(t, r.Deleted)
		assert.True(t, f.hasVM("ghost"))

		r = col.Scan(ctx)
		require.NoError(t, r.Err)
		assert.Len(t, r.Deleted, 1)
		assert.Equal(t, []string{"live"}, f.vmNames())
	})

	t.Run("a driver without TYPE_LIST_MACHINES is never scanned", func(t *testing.T) {
		ctx := context.Background()
		f := newFixture(t, env, inmemory.Options{
			DisabledCapabilities: []driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_LIST_MACHINES},
		})
		mgr := controllertest.NewManager(t, env.Config, env.Scheme)
		controllertest.Start(t, mgr)
		f.vm("ghost")
		col := f.collector(mgr, nil)
		for range 3 {
			r := col.Scan(ctx)
			require.NoError(t, r.Err)
			assert.Zero(t, r.Classes)
		}
		assert.Zero(t, f.drv.VMs.Calls(inmemory.MethodListMachines))
		assert.True(t, f.hasVM("ghost"))
	})

	t.Run("a fresh read saves a machine the cache has not seen", func(t *testing.T) {
		ctx := context.Background()
		f := newFixture(t, env, inmemory.Options{})
		proxy := controllertest.StartProxy(t, env.Config)
		mgr := controllertest.NewManager(t, proxy.Config(env.Config), env.Scheme)
		controllertest.Start(t, mgr)
		f.liveMachine("early")
		f.waitCached(mgr, 1)

		// The manager's cache goes stale: its API server connection is cut,
		// while the collector's fresh reads still reach the API server.
		proxy.SetDown(true)
		f.liveMachine("late")
		f.vm("ghost")
		col := f.collector(mgr, env.Client)

		r1 := col.Scan(ctx)
		require.NoError(t, r1.Err)
		require.Equal(t, 2, r1.Candidates, "the stale cache misses late's Machine, so late's VM is a candidate")
		r2 := col.Scan(ctx)
		require.NoError(t, r2.Err)
		require.Equal(t, 2, r2.Candidates)
		assert.Len(t, r2.Deleted, 1, "only the ghost goes")
		assert.Equal(t, []string{"early", "late"}, f.vmNames())
		assert.Equal(t, 1, f.deleteCalls())
	})

	t.Run("control API server unreachable: no scan, no deletion", func(t *testing.T) {
		f := newFixture(t, env, inmemory.Options{})
		f.liveMachine("live-1")
		f.liveMachine("live-2")
		f.vm("ghost-1")

		proxy := controllertest.StartProxy(t, env.Config)
		proxy.SetDown(true) // down before the manager starts: its caches cannot sync
		mgr := controllertest.NewManager(t, proxy.Config(env.Config), env.Scheme)
		rec := &scans{}
		col := f.collector(mgr, nil)
		col.Period = scanPeriod
		// cutOnFirstSighting, once armed, takes the API server away in the
		// scan that first sees an orphan, before the next scan can start:
		// cut from the test's goroutine, a second scan (30 ms later) may
		// come first and delete it with the API server still there.
		var cutOnFirstSighting atomic.Bool
		col.Observe = func(r orphan.Result) {
			rec.observe(r)
			if r.Err == nil && r.Candidates == 1 && cutOnFirstSighting.CompareAndSwap(true, false) {
				proxy.SetDown(true)
			}
		}
		require.NoError(t, col.SetupWithManager(mgr, setup.Env{}))
		controllertest.Start(t, mgr)

		requireNever(t, func() bool { return f.drv.VMs.Calls(inmemory.MethodListMachines) > 0 }, 20*scanPeriod,
			"the collector listed VMs before its caches could sync")
		assert.Zero(t, rec.count(every), "no scan may run before the caches synced")

		proxy.SetDown(false)
		require.Eventually(t, func() bool { return !f.hasVM("ghost-1") }, controllertest.WaitFor, controllertest.Tick)
		assert.Equal(t, []string{"live-1", "live-2"}, f.vmNames())

		// A new orphan is seen once; then the API server goes away.
		callsBefore := f.deleteCalls()
		cutOnFirstSighting.Store(true)
		f.vm("ghost-2")
		require.Eventually(t, func() bool { return !cutOnFirstSighting.Load() }, controllertest.WaitFor, controllertest.Tick,
			"no scan saw the new orphan")
		abortedBefore := rec.count(aborted)
		// client-go retries a failed GET for a few seconds before it gives
		// up, so an aborted scan takes a while.
		require.Eventually(t, func() bool { return rec.count(aborted) >= abortedBefore+2 }, controllertest.WaitFor, controllertest.Tick,
			"scans must keep running, and abort, while the API server is unreachable")
		assert.Equal(t, callsBefore, f.deleteCalls(), "no DeleteMachine while the API server is unreachable")
		assert.True(t, f.hasVM("ghost-2"))
		assert.True(t, f.hasVM("live-1"))
		assert.True(t, f.hasVM("live-2"))

		// Back again: the aborted scans reset the candidates, so ghost-2 needs
		// two new successful scans.
		results, _ := rec.snapshot()
		recovered := len(results)
		proxy.SetDown(false)
		require.Eventually(t, func() bool { return !f.hasVM("ghost-2") }, controllertest.WaitFor, controllertest.Tick)
		results, _ = rec.snapshot()
		var okAfter []orphan.Result
		for _, r := range results[recovered:] {
			if r.Err == nil {
				okAfter = append(okAfter, r)
			}
		}
		require.GreaterOrEqual(t, len(okAfter), 2, describe(results[recovered:]))
		assert.Empty(t, okAfter[0].Deleted, "the first successful scan after the outage deleted something:\n%s", describe(results[recovered:]))
		assert.Equal(t, []string{"live-1", "live-2"}, f.vmNames())
	})

	t.Run("a restarted manager with cold caches deletes no VM of a live machine", func(t *testing.T) {
		f := newFixture(t, env, inmemory.Options{})
		for _, name := range []string{"live-1", "live-2", "live-3"} {
			f.liveMachine(name)
		}
		f.vm("creating")
		f.machine("creating", "", "")
		f.vm("ghost-1")

		mgr1 := controllertest.NewManager(t, env.Config, env.Scheme)
		rec1 := &scans{}
		col1 := f.collector(mgr1, nil)
		col1.Period = scanPeriod
		col1.Observe = rec1.observe
		require.NoError(t, col1.SetupWithManager(mgr1, setup.Env{}))
		run1 := controllertest.Start(t, mgr1)
		require.Eventually(t, func() bool { return rec1.count(succeeded) >= 4 }, controllertest.WaitFor, controllertest.Tick)
		run1()
		assert.Equal(t, []string{"creating", "live-1", "live-2", "live-3"}, f.vmNames())
		assert.Equal(t, 1, f.deleteCalls())

		// While no manager runs, machines come and go.
		f.liveMachine("live-4")
		f.vm("ghost-2")

		mgr2 := controllertest.NewManager(t, env.Config, env.Scheme)
		rec2 := &scans{probe: func() string {
			if f.hasVM("ghost-2") {
				return "ghost-2 exists"
			}
			return "ghost-2 gone"
		}}
		col2 := f.collector(mgr2, nil)
		col2.Period = scanPeriod
		col2.Observe = rec2.observe
		require.NoError(t, col2.SetupWithManager(mgr2, setup.Env{}))
		controllertest.Start(t, mgr2)
		require.Eventually(t, func() bool { return rec2.count(succeeded) >= 6 }, controllertest.WaitFor, controllertest.Tick)

		results, probes := rec2.snapshot()
		require.NoError(t, results[0].Err)
		assert.Equal(t, "ghost-2 exists", probes[0], "the first scan after the restart must not delete")
		assert.Equal(t, []string{"creating", "live-1", "live-2", "live-3", "live-4"}, f.vmNames())
		assert.Equal(t, 2, f.deleteCalls())
	})
}

// TestCollectorRequiresDriver checks the configuration errors.
func TestCollectorRequiresDriver(t *testing.T) {
	r := (&orphan.Collector{}).Scan(context.Background())
	require.Error(t, r.Err)
	assert.Contains(t, r.Err.Error(), "Driver is required")
}
