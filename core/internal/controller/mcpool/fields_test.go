package mcpool_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/testenv"
)

// TestPoolFields: the MCO pool fields machina does not act on are refused
// at runtime, naming them, and the counts are stored even when 0.
func TestPoolFields(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	startControllers(t, env)

	t.Run("counts of 0 are stored", func(t *testing.T) {
		createPool(t, c, "empty", "", nil)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "empty"}, "synced", func(p *mcv1.MachineConfigPool) bool {
			return p.Status.ObservedGeneration == p.Generation && conditionOf(p, mcv1.PoolUpdated).Type != ""
		})
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(mcv1.GroupVersion.WithKind("MachineConfigPool"))
		require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: "empty"}, u))
		for _, field := range []string{"machineCount", "updatedMachineCount", "readyMachineCount", "unavailableMachineCount", "degradedMachineCount"} {
			v, found, err := unstructured.NestedInt64(u.Object, "status", field)
			require.NoError(t, err, field)
			assert.True(t, found, "status.%s is stored, so kubectl get mcp shows 0", field)
			assert.Zero(t, v, field)
		}
	})

	t.Run("pinnedImageSets and osImageStream are refused naming them; the rollout goes on", func(t *testing.T) {
		createRendered(t, c, "rendered-pin-a")
		names := createNodes(t, c, "pin", 1, map[string]string{"pool": "pin"}, "")
		pool := &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: "pin"}}
		pool.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "pin"}}
		pool.Spec.Configuration.Name = "rendered-pin-a"
		pool.Spec.PinnedImageSets = []mcv1.PinnedImageSetRef{{Name: "release"}}
		pool.Spec.OSImageStream = &mcv1.OSImageStreamReference{Name: "rhel-10"}
		require.NoError(t, c.Create(t.Context(), pool))

		got := controllertest.WaitObject(t, c, client.ObjectKey{Name: "pin"}, "degraded", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolDegraded, metav1.ConditionTrue)
		})
		d := conditionOf(got, mcv1.PoolDegraded)
		assert.Equal(t, "UnsupportedField", d.Reason)
		assert.Contains(t, d.Message, "spec.pinnedImageSets is not supported")
		assert.Contains(t, d.Message, `spec.osImageStream ("rhel-10") is not supported`)
		controllertest.WaitObject(t, c, client.ObjectKey{Name: names[0]}, "given the configuration", func(n *corev1.Node) bool { return n.Annotations[keyDesired] == "rendered-pin-a" })

		updatePool(t, c, "pin", func(p *mcv1.MachineConfigPool) { p.Spec.PinnedImageSets, p.Spec.OSImageStream = nil, nil })
		controllertest.WaitObject(t, c, client.ObjectKey{Name: "pin"}, "no longer degraded", func(p *mcv1.MachineConfigPool) bool {
			return conditionIs(p, mcv1.PoolDegraded, metav1.ConditionFalse)
		})
	})
}
