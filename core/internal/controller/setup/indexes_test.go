package setup_test

import (
	"fmt"
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

// TestCachedMachinesMatchList reads machines by each index through
// CachedMachines, from the informer's index, and through a List of the
// manager's client: the two must agree, in other namespaces too, so that a
// controller-runtime whose index keys change fails here, not in a rollout.
func TestCachedMachinesMatchList(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	nsA := controllertest.Namespace(t, c, "cached-a")
	nsB := controllertest.Namespace(t, c, "cached-b")
	mgr := controllertest.StartManager(t, env, setup.IndexMachines)

	owner := types.UID("7a1e-set")
	isController := true
	for _, ns := range []string{nsA, nsB} {
		for i, node := range []string{"node-a", "node-b", ""} {
			m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("m-", i), Labels: map[string]string{}}}
			if node != "" {
				m.Labels[v1alpha1.NodeLabelKey] = node
			}
			if i < 2 {
				m.OwnerReferences = []metav1.OwnerReference{{APIVersion: "machine.sapcloud.io/v1alpha1", Kind: "MachineSet", Name: "set", UID: owner, Controller: &isController}}
			}
			m.Spec.Class = v1alpha1.ClassSpec{Kind: "MachineClass", Name: "c"}
			require.NoError(t, c.Create(t.Context(), m))
		}
	}
	cached := setup.NewCachedMachines(mgr.GetClient(), mgr.GetClient(), mgr.GetCache())
	require.NotNil(t, cached.Cache, "the manager's client reads through the informer index")
	listed := setup.CachedMachines{Client: mgr.GetClient()}
	names := func(r setup.CachedMachines, ns, field, value string) []string {
		ms, err := r.ByField(t.Context(), ns, field, value)
		require.NoError(t, err)
		out := []string{}
		for _, m := range ms {
			out = append(out, m.Namespace+"/"+m.Name)
		}
		return out
	}
	require.Eventually(t, func() bool { return len(names(listed, nsB, setup.MachineControllerIndex, setup.Orphan)) == 1 }, 30*time.Second, 50*time.Millisecond)
	for _, ns := range []string{nsA, nsB} {
		for _, q := range [][2]string{
			{setup.MachineControllerIndex, string(owner)}, {setup.MachineControllerIndex, setup.Orphan}, {setup.MachineControllerIndex, "nobody"},
			{setup.MachineNodeIndex, "node-a"}, {setup.MachineNodeIndex, "node-c"},
		} {
			want := names(listed, ns, q[0], q[1])
			assert.ElementsMatch(t, want, names(cached, ns, q[0], q[1]), "%s %s=%s", ns, q[0], q[1])
		}
	}
	assert.Len(t, names(cached, nsA, setup.MachineControllerIndex, string(owner)), 2)
}
