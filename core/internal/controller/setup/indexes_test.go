package setup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// TestIndexMachines registers the shared indexes as three controllers of
// one manager would (a second registration of a field is an error to the
// cache, so this fails if IndexMachines is not idempotent), and reads
// machines by node name, by controller UID and as orphans from the cache.
func TestIndexMachines(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ns := controllertest.Namespace(t, c, "indexes")
	mgr := controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		for range 3 {
			if err := setup.IndexMachines(mgr); err != nil {
				return err
			}
		}
		return nil
	})

	owner := types.UID("3f6c1d9e-set")
	isController := true
	owned := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owned",
		Labels:          map[string]string{v1alpha1.NodeLabelKey: "node-a"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "machine.sapcloud.io/v1alpha1", Kind: "MachineSet", Name: "set", UID: owner, Controller: &isController}}}}
	orphan := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}}
	for _, m := range []*v1alpha1.Machine{owned, orphan} {
		m.Spec.Class = v1alpha1.ClassSpec{Kind: "MachineClass", Name: "c"}
		require.NoError(t, c.Create(t.Context(), m))
	}

	names := func(key, value string) []string {
		list := &v1alpha1.MachineList{}
		require.NoError(t, mgr.GetClient().List(t.Context(), list, client.InNamespace(ns), client.MatchingFields{key: value}))
		var out []string
		for _, m := range list.Items {
			out = append(out, m.Name)
		}
		return out
	}
	require.Eventually(t, func() bool { return len(names(setup.MachineControllerIndex, setup.Orphan)) == 1 }, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, []string{"owned"}, names(setup.MachineNodeIndex, "node-a"))
	assert.Empty(t, names(setup.MachineNodeIndex, "node-b"))
	assert.Equal(t, []string{"owned"}, names(setup.MachineControllerIndex, string(owner)))
	assert.Equal(t, []string{"orphan"}, names(setup.MachineControllerIndex, setup.Orphan))
}
