package orphan_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/safety/orphan"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// A Trigger (fired by the Machine controller on OUT_OF_RANGE) runs a scan at
// once, long before the period; two fires make the two scans in a row an
// orphan needs.
func TestOrphanCollectorTrigger(t *testing.T) {
	env := testenv.Start(t)
	f := newFixture(t, env, inmemory.Options{})
	f.liveMachine("live")
	f.vm("ghost")
	mgr := controllertest.NewManager(t, env.Config, env.Scheme)
	rec := &scans{}
	trigger := orphan.NewTrigger()
	col := f.collector(mgr, nil)
	col.Period = time.Hour
	col.Trigger = trigger
	col.Observe = rec.observe
	require.NoError(t, col.SetupWithManager(mgr, setup.Env{}))
	controllertest.Start(t, mgr)

	require.Eventually(t, func() bool { return rec.count(every) == 1 }, controllertest.WaitFor, controllertest.Tick, "the first scan at start")
	assert.True(t, f.hasVM("ghost"), "one sighting deletes nothing")

	trigger.Fire()
	require.Eventually(t, func() bool { return rec.count(every) == 2 }, controllertest.WaitFor, controllertest.Tick,
		"the fired scan did not run before the period")
	require.Eventually(t, func() bool { return !f.hasVM("ghost") }, controllertest.WaitFor, controllertest.Tick)
	assert.True(t, f.hasVM("live"))

	var nilTrigger *orphan.Trigger
	nilTrigger.Fire() // a collector without a trigger: firing is a no-op
}
