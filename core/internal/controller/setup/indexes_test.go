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
	"sigs.k8s.io/controller-runtime/pkg/cache"
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
// It does so for a cache of all namespaces and for the manager's: a cache
// of one named namespace built by NewIndexedCache, whose informer hides its
// index. Either way the machines handed out are the cache's own (the same
// pointer twice), not copies.
func TestCachedMachinesMatchList(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	nsA := controllertest.Namespace(t, c, "cached-a")
	nsB := controllertest.Namespace(t, c, "cached-b")

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
	for _, tc := range []struct {
		name       string
		namespaces []string
		opts       func(*ctrl.Options)
	}{
		{"all namespaces", []string{nsA, nsB}, func(*ctrl.Options) {}},
		{"one namespace, the manager's cache", []string{nsB}, func(o *ctrl.Options) {
			o.Cache.DefaultNamespaces = map[string]cache.Config{nsB: {}}
			o.NewCache = setup.NewIndexedCache
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mgr := controllertest.StartManager(t, env, setup.IndexMachines, tc.opts)
			cached := setup.NewCachedMachines(mgr.GetClient(), mgr.GetClient(), mgr.GetCache())
			require.NotNil(t, cached.Cache, "the manager's client reads through the informer index")
			listed := setup.CachedMachines{Client: mgr.GetClient()}
			read := func(r setup.CachedMachines, ns, field, value string) []*v1alpha1.Machine {
				ms, err := r.ByField(t.Context(), ns, field, value)
				require.NoError(t, err)
				return ms
			}
			names := func(r setup.CachedMachines, ns, field, value string) []string {
				out := []string{}
				for _, m := range read(r, ns, field, value) {
					out = append(out, m.Namespace+"/"+m.Name)
				}
				return out
			}
			require.Eventually(t, func() bool { return len(names(listed, nsB, setup.MachineControllerIndex, setup.Orphan)) == 1 }, 30*time.Second, 50*time.Millisecond)
			for _, ns := range tc.namespaces {
				for _, q := range [][2]string{
					{setup.MachineControllerIndex, string(owner)}, {setup.MachineControllerIndex, setup.Orphan}, {setup.MachineControllerIndex, "nobody"},
					{setup.MachineNodeIndex, "node-a"}, {setup.MachineNodeIndex, "node-c"},
				} {
					want := names(listed, ns, q[0], q[1])
					assert.ElementsMatch(t, want, names(cached, ns, q[0], q[1]), "%s %s=%s", ns, q[0], q[1])
				}
			}
			first := read(cached, nsB, setup.MachineControllerIndex, string(owner))
			require.Len(t, first, 2)
			again := read(cached, nsB, setup.MachineControllerIndex, string(owner))
			require.Len(t, again, 2)
			// An index hands out its objects in no set order.
			for _, m := range again {
				assert.True(t, m == first[0] || m == first[1], "machine %s read from the informer's index, not copied by a List", m.Name)
			}
		})
	}
}
