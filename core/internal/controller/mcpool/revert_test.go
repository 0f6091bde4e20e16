package mcpool_test

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mcpool"
	"github.com/machina-io/machina/core/internal/controller/mcrender"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// TestRevertHeals runs the render controller with the pool and drain
// controllers: a MachineConfig the nodes cannot apply degrades the first
// node it reaches; the user fixes the MachineConfig, the pool renders a new
// target, and the degraded node is given it with no manual step. The test
// plays the node agent, which starts again from Working when its
// desiredConfig changes. maxUnavailable (1) holds throughout: the nodes
// that are not Done on what they were given, degraded ones included, are
// never more than one.
func TestRevertHeals(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	startControllers(t, env, func(mgr ctrl.Manager) error {
		return (&mcrender.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1})
	})

	require.NoError(t, c.Create(t.Context(), healFragment("10-heal-base", "/etc/heal-base", "base")))
	one := intstr.FromInt32(1)
	pool := &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "heal"}}
	pool.Spec.MachineConfigSelector = &metav1.LabelSelector{MatchLabels: map[string]string{mcv1.RoleLabel: "heal"}}
	pool.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "heal"}}
	pool.Spec.MaxUnavailable = &one
	require.NoError(t, c.Create(t.Context(), pool))
	base := controllertest.WaitObject(t, c, client.ObjectKey{Name: "heal"}, "rendered", func(p *mcv1.MachineConfigPool) bool {
		return p.Spec.Configuration.Name != ""
	}).Spec.Configuration.Name
	names := createNodes(t, c, "heal", 3, map[string]string{"pool": "heal"}, base)
	controllertest.WaitObject(t, c, client.ObjectKey{Name: "heal"}, "updated on the base rendering", func(p *mcv1.MachineConfigPool) bool {
		return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.MachineCount == 3
	})
	peak := watchInFlight(t, c, names, "")

	// A MachineConfig the nodes cannot apply: rendering A.
	require.NoError(t, c.Create(t.Context(), healFragment("20-heal-motd", "/etc/motd", "broken")))
	a := controllertest.WaitObject(t, c, client.ObjectKey{Name: "heal"}, "rendered A", func(p *mcv1.MachineConfigPool) bool {
		return p.Spec.Configuration.Name != base
	}).Spec.Configuration.Name
	var first string
	controllertest.WaitObject(t, c, client.ObjectKey{Name: "heal"}, "a node given A", func(*mcv1.MachineConfigPool) bool {
		if f := inFlight(t, c, names, a); len(f) == 1 {
			first = f[0]
		}
		return first != ""
	})
	// The agent starts, is drained, and fails.
	controllertest.PatchNodeAnnotations(t, c, first, map[string]string{keyState: "Working", keyReason: ""})
	controllertest.PatchNodeAnnotations(t, c, first, map[string]string{keyDrain: "drain-" + a})
	controllertest.WaitObject(t, c, client.ObjectKey{Name: first}, "drained for A", func(n *corev1.Node) bool { return n.Annotations[keyLastApplied] == "drain-"+a })
	controllertest.PatchNodeAnnotations(t, c, first, map[string]string{keyState: "Degraded", keyReason: "writing /etc/motd: read-only file system"})
	controllertest.WaitObject(t, c, client.ObjectKey{Name: "heal"}, "node degraded", func(p *mcv1.MachineConfigPool) bool {
		return conditionIs(p, mcv1.PoolNodeDegraded, metav1.ConditionTrue)
	})
	assert.Equal(t, 1, countOn(t, c, names, a), "a degraded node stops the rollout")
	require.Eventually(t, func() bool { return poolMetric(t, "machina_machineconfigpool_degraded", "heal", "") == 1 },
		controllertest.WaitFor, controllertest.Tick, "the pool's degraded metric never said 1")
	assert.Equal(t, 1.0, poolMetric(t, "machina_machineconfigpool_machines", "heal", "degraded"))

	// The user fixes the MachineConfig: rendering B becomes the target.
	fixed := &mcv1.MachineConfig{}
	require.NoError(t, retry(func() error {
		if err := c.Get(t.Context(), client.ObjectKey{Name: "20-heal-motd"}, fixed); err != nil {
			return err
		}
		fixed.Spec.Config.Raw = healFragment("", "/etc/motd", "fixed").Spec.Config.Raw
		return c.Update(t.Context(), fixed)
	}))
	b := controllertest.WaitObject(t, c, client.ObjectKey{Name: "heal"}, "rendered B", func(p *mcv1.MachineConfigPool) bool {
		return p.Spec.Configuration.Name != a
	}).Spec.Configuration.Name
	require.NotEqual(t, base, b)

	// Nobody touches the node: the pool gives it B.
	controllertest.WaitObject(t, c, client.ObjectKey{Name: first}, "re-targeted to B", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == b })
	controllertest.RequireEvent(t, c, &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "heal"}},
		mcpool.ReasonSetDesiredConfig, "Targeted node "+first+" to "+b+" (it was Degraded on "+a+", which the pool no longer targets)")
	assert.Equal(t, 1, countOn(t, c, names, b), "the others wait for the re-targeted node")

	// Its agent starts again from Working and succeeds on B; the others follow
	// one at a time.
	agentUpdate(t, c, first)
	var rest []string
	for _, n := range names {
		if n != first {
			rest = append(rest, n)
		}
	}
	assert.Equal(t, []int{1, 1}, rollOut(t, c, rest, b, 1))
	got := controllertest.WaitObject(t, c, client.ObjectKey{Name: "heal"}, "updated on B", func(p *mcv1.MachineConfigPool) bool {
		return conditionIs(p, mcv1.PoolUpdated, metav1.ConditionTrue) && p.Status.Configuration.Name == b
	})
	assert.True(t, conditionIs(got, mcv1.PoolNodeDegraded, metav1.ConditionFalse))
	assert.True(t, conditionIs(got, mcv1.PoolDegraded, metav1.ConditionFalse))
	assert.Equal(t, int32(3), got.Status.UpdatedMachineCount)
	assert.Equal(t, 1, peak.peak(), "never more than maxUnavailable (1) nodes not done, the degraded one included")
	// The metrics are read from the manager's cache, which shows the pool's
	// last status write a moment after the API server (read above) does:
	// asserted at once, they could still say 2 updated.
	require.Eventually(t, func() bool {
		return poolMetric(t, "machina_machineconfigpool_degraded", "heal", "") == 0 &&
			poolMetric(t, "machina_machineconfigpool_machines", "heal", "updated") == 3
	}, controllertest.WaitFor, controllertest.Tick, "the pool's metrics never said 0 degraded and 3 updated")
}

// poolMetric reads a pool metric (with the label state when given) from
// the registry the manager serves; -1 when it has no such series.
func poolMetric(t *testing.T, name, pool, state string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["pool"] == pool && labels["state"] == state {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

// healFragment is a MachineConfig of the heal pool writing one file.
func healFragment(name, path, content string) *mcv1.MachineConfig {
	mc := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{mcv1.RoleLabel: "heal"}}}
	mc.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.2.0"},"storage":{"files":[{"path":"` + path +
		`","mode":420,"contents":{"source":"` + mcv1.DataURL([]byte(content)) + `"}}]}}`)
	return mc
}
