package mcgc_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mcgc"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// grace is the collector's grace in these tests: short, so that a test
// waits for a deletion rather than sleeping.
const grace = 2 * time.Second

// TestCollect runs the collector against a real API server, with the
// renderings written by hand as the render controller writes them
// (controlled by their pool). A pool's target moved on twice while a Node
// still runs the first rendering (the three renderings are there): the second, referred to by nobody, is
// collected after the grace; the first only once the Node moves on; the
// target and a user's MachineConfig nobody refers to stay.
func TestCollect(t *testing.T) {
	env := testenv.Start(t)
	controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		return (&mcgc.Collector{Grace: grace}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 1})
	})
	c, ctx := env.Client, t.Context()

	first, second, third, users := "rendered-gc-1", "rendered-gc-2", "rendered-gc-3", "50-users"
	// The pool and the Node refer to their renderings before these exist:
	// no rendering in use is ever unreferenced.
	pool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "gc"}}
	pool.Spec.Configuration.Name = third
	require.NoError(t, c.Create(ctx, pool))
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gc-node", Annotations: map[string]string{
		mcfgv1.CurrentConfigAnnotation: first, mcfgv1.DesiredConfigAnnotation: first,
	}}}
	require.NoError(t, c.Create(ctx, node))
	owner := *metav1.NewControllerRef(pool, mcfgv1.GroupVersion.WithKind("MachineConfigPool"))
	for _, name := range []string{users, first, second, third} {
		mc := &mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if name != users {
			mc.OwnerReferences = []metav1.OwnerReference{owner}
		}
		mc.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.5.0"}}`)
		require.NoError(t, c.Create(ctx, mc))
	}

	gone := func(name string) bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: name}, &mcfgv1.MachineConfig{}))
	}
	require.Eventually(t, func() bool { return gone(second) }, controllertest.WaitFor, controllertest.Tick,
		"%s, referred to by nobody, was never collected", second)
	for name, why := range map[string]string{first: "the Node's configuration", third: "the pool's target", users: "a user's MachineConfig"} {
		mc := &mcfgv1.MachineConfig{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, mc), "%s must stay", why)
		assert.NotContains(t, mc.Annotations, mcfgv1.UnreferencedSinceAnnotation, "%s is not marked", why)
	}

	// The Node moves on: the first rendering goes too, the target stays.
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(node), node))
	node.Annotations[mcfgv1.CurrentConfigAnnotation] = third
	node.Annotations[mcfgv1.DesiredConfigAnnotation] = third
	require.NoError(t, c.Update(ctx, node))
	require.Eventually(t, func() bool { return gone(first) }, controllertest.WaitFor, controllertest.Tick,
		"%s was never collected after the Node moved on", first)
	assert.False(t, gone(third), "the pool's target stays")
	assert.False(t, gone(users), "a user's MachineConfig stays")
}
