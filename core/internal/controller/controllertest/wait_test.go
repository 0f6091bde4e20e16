package controllertest_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/testenv"
)

func init() { controllertest.UseTestLogger() }

// The waits poll the API server until a later write shows: each condition
// below makes that write itself on its first look and says "not yet", so
// a wait that returned without reading again would fail the test.
func TestWaits(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ns := controllertest.Namespace(t, c, "wait")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm"}, Data: map[string]string{"k": "old"}}
	require.NoError(t, c.Create(t.Context(), cm))
	key := client.ObjectKeyFromObject(cm)

	t.Run("WaitObject returns the object once cond holds", func(t *testing.T) {
		looks := 0
		got := controllertest.WaitObject(t, c, key, "k=new", func(cm *corev1.ConfigMap) bool {
			looks++
			if looks == 1 {
				require.Equal(t, "old", cm.Data["k"])
				cm.Data["k"] = "new"
				require.NoError(t, c.Update(t.Context(), cm))
				return false
			}
			return cm.Data["k"] == "new"
		})
		require.Equal(t, "new", got.Data["k"])
		require.GreaterOrEqual(t, looks, 2)
	})

	t.Run("WaitGone returns once the object is deleted", func(t *testing.T) {
		deleted := false
		controllertest.Eventually(t, func() bool {
			if !deleted {
				require.NoError(t, c.Delete(t.Context(), cm))
				deleted = true
			}
			return true
		}, "Eventually runs cond")
		controllertest.WaitGone[*corev1.ConfigMap](t, c, key)
	})
}
