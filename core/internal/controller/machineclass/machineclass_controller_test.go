package machineclass_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/machineclass"
	"github.com/machina-io/machina/core/testenv"
)

const (
	waitFor = 30 * time.Second
	tick    = 50 * time.Millisecond
)

func TestMachineClassController(t *testing.T) {
	env := testenv.Start(t)
	mgr := startManager(t, env)
	c := env.Client

	t.Run("live class gets the finalizer without any referrer", func(t *testing.T) {
		ns := namespace(t, c)
		class := newClass(ns, "lonely")
		require.NoError(t, c.Create(t.Context(), class))
		requireFinalizer(t, c, class)
	})

	t.Run("deletion waits for machines, sets and deployments", func(t *testing.T) {
		ctx := t.Context()
		ns := namespace(t, c)
		class := newClass(ns, "used")
		require.NoError(t, c.Create(ctx, class))
		requireFinalizer(t, c, class)

		m := newMachine(ns, "m1", class.Name)
		ms := newMachineSet(ns, "set1", class.Name)
		md := newMachineDeployment(ns, "dep1", class.Name)
		for _, obj := range []client.Object{m, ms, md} {
			require.NoError(t, c.Create(ctx, obj))
		}
		// The cache must have seen the referrers before the class is deleted,
		// or the controller would (rightly, by what it sees) release it.
		waitCached(t, mgr, m, ms, md)

		require.NoError(t, c.Delete(ctx, class))
		requireEvent(t, c, class, machineclass.ReasonDeletionBlocked, "Machine m1, MachineDeployment dep1, MachineSet set1")
		requireStays(t, c, class)

		require.NoError(t, c.Delete(ctx, m))
		require.NoError(t, c.Delete(ctx, ms))
		requireStays(t, c, class)

		require.NoError(t, c.Delete(ctx, md))
		requireGone(t, c, class)
	})

	t.Run("a machine moving to another class releases the old one", func(t *testing.T) {
		ctx := t.Context()
		ns := namespace(t, c)
		oldClass, newClass := newClass(ns, "old"), newClass(ns, "new")
		require.NoError(t, c.Create(ctx, oldClass))
		require.NoError(t, c.Create(ctx, newClass))
		m := newMachine(ns, "mover", oldClass.Name)
		require.NoError(t, c.Create(ctx, m))
		waitCached(t, mgr, m)
		requireFinalizer(t, c, oldClass)

		require.NoError(t, c.Delete(ctx, oldClass))
		requireEvent(t, c, oldClass, machineclass.ReasonDeletionBlocked, "Machine mover")

		patch := client.MergeFrom(m.DeepCopy())
		m.Spec.Class.Name = newClass.Name
		require.NoError(t, c.Patch(ctx, m, patch))
		requireGone(t, c, oldClass)

		// The new class is referenced now: its deletion is held.
		require.NoError(t, c.Delete(ctx, newClass))
		requireEvent(t, c, newClass, machineclass.ReasonDeletionBlocked, "Machine mover")
		requireStays(t, c, newClass)
	})

	t.Run("references of another kind or group are not references", func(t *testing.T) {
		ctx := t.Context()
		ns := namespace(t, c)
		class := newClass(ns, "aws")
		require.NoError(t, c.Create(ctx, class))
		m := newMachine(ns, "other-kind", class.Name)
		m.Spec.Class.Kind = "AWSMachineClass"
		require.NoError(t, c.Create(ctx, m))
		waitCached(t, mgr, m)
		requireFinalizer(t, c, class)

		require.NoError(t, c.Delete(ctx, class))
		requireGone(t, c, class)
	})

	t.Run("MachinesOfClass maps a class to its live machines", func(t *testing.T) {
		ctx := t.Context()
		ns := namespace(t, c)
		class := newClass(ns, "mapped")
		require.NoError(t, c.Create(ctx, class))
		a, b := newMachine(ns, "a", class.Name), newMachine(ns, "b", class.Name)
		other := newMachine(ns, "other", "another-class")
		leaving := newMachine(ns, "leaving", class.Name)
		// A finalizer of the test's own keeps the deleted machine around.
		leaving.Finalizers = []string{"test.machina.io/hold"}
		for _, obj := range []client.Object{a, b, other, leaving} {
			require.NoError(t, c.Create(ctx, obj))
		}
		require.NoError(t, c.Delete(ctx, leaving))
		t.Cleanup(func() {
			patch := client.MergeFrom(leaving.DeepCopy())
			leaving.Finalizers = nil
			_ = c.Patch(context.Background(), leaving, patch)
		})

		got := machineclass.MachinesOfClass(c)(ctx, class)
		var names []string
		for _, r := range got {
			assert.Equal(t, ns, r.Namespace)
			names = append(names, r.Name)
		}
		assert.ElementsMatch(t, []string{"a", "b"}, names)
	})
}

// startManager runs a manager with only the MachineClass controller.
func startManager(t *testing.T, env *testenv.Env) ctrl.Manager {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	require.NoError(t, err)
	require.NoError(t, (&machineclass.Reconciler{}).SetupWithManager(mgr, 2))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	require.True(t, mgr.GetCache().WaitForCacheSync(ctx))
	return mgr
}

var nsCounter int

// namespace creates a fresh namespace for one subtest.
func namespace(t *testing.T, c client.Client) string {
	t.Helper()
	nsCounter++
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("mcc-%d", nsCounter)}}
	require.NoError(t, c.Create(t.Context(), ns))
	return ns.Name
}

func newClass(ns, name string) *v1alpha1.MachineClass {
	return &v1alpha1.MachineClass{
		ObjectMeta:   metav1.ObjectMeta{Namespace: ns, Name: name},
		ProviderSpec: runtime.RawExtension{Raw: []byte(`{"size":"small"}`)},
	}
}

func classRef(name string) v1alpha1.ClassSpec {
	return v1alpha1.ClassSpec{APIGroup: v1alpha1.GroupVersion.Group, Kind: "MachineClass", Name: name}
}

func newMachine(ns, name, class string) *v1alpha1.Machine {
	return &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.MachineSpec{Class: classRef(class)},
	}
}

func template(class string) v1alpha1.MachineTemplateSpec {
	return v1alpha1.MachineTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
		Spec:       v1alpha1.MachineSpec{Class: classRef(class)},
	}
}

func newMachineSet(ns, name, class string) *v1alpha1.MachineSet {
	return &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MachineSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: template(class),
		},
	}
}

func newMachineDeployment(ns, name, class string) *v1alpha1.MachineDeployment {
	return &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MachineDeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: template(class),
		},
	}
}

// waitCached waits until the manager's cache holds every object.
func waitCached(t *testing.T, mgr ctrl.Manager, objs ...client.Object) {
	t.Helper()
	for _, obj := range objs {
		into := obj.DeepCopyObject().(client.Object)
		require.Eventually(t, func() bool {
			return mgr.GetCache().Get(t.Context(), client.ObjectKeyFromObject(obj), into) == nil
		}, waitFor, tick, "cache never saw %s", obj.GetName())
	}
}

func requireFinalizer(t *testing.T, c client.Client, class *v1alpha1.MachineClass) {
	t.Helper()
	require.Eventually(t, func() bool {
		got := &v1alpha1.MachineClass{}
		return c.Get(t.Context(), client.ObjectKeyFromObject(class), got) == nil &&
			controllerutil.ContainsFinalizer(got, v1alpha1.MachineFinalizer)
	}, waitFor, tick, "class %s never got the finalizer", class.Name)
}

// requireStays checks that a deleted class is still there, held by the
// finalizer, a while after its deletion.
func requireStays(t *testing.T, c client.Client, class *v1alpha1.MachineClass) {
	t.Helper()
	// Give a wrong release the time to happen: several reconciles' worth.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		got := &v1alpha1.MachineClass{}
		require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(class), got), "class %s released too early", class.Name)
		require.True(t, controllerutil.ContainsFinalizer(got, v1alpha1.MachineFinalizer))
		require.False(t, got.DeletionTimestamp.IsZero())
		time.Sleep(tick)
	}
}

func requireGone(t *testing.T, c client.Client, class *v1alpha1.MachineClass) {
	t.Helper()
	require.Eventually(t, func() bool {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(class), &v1alpha1.MachineClass{})
		return apierrors.IsNotFound(err)
	}, waitFor, tick, "class %s was never released", class.Name)
}

// requireEvent waits for an event with reason on the class whose note
// contains want.
func requireEvent(t *testing.T, c client.Client, class *v1alpha1.MachineClass, reason, want string) {
	t.Helper()
	var notes []string
	require.Eventually(t, func() bool {
		list := &eventsv1.EventList{}
		if err := c.List(t.Context(), list, client.InNamespace(class.Namespace)); err != nil {
			return false
		}
		notes = notes[:0]
		for _, e := range list.Items {
			if e.Regarding.Kind != "MachineClass" || e.Regarding.Name != class.Name || e.Reason != reason {
				continue
			}
			notes = append(notes, e.Note)
			if strings.Contains(e.Note, want) {
				return true
			}
		}
		return false
	}, waitFor, tick, "no %s event on %s containing %q; saw %q", reason, class.Name, want, notes)
}
