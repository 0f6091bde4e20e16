package machineclass_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/machineclass"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

func TestMachineClassController(t *testing.T) {
	env := testenv.Start(t)
	mgr := controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		return (&machineclass.Reconciler{}).SetupWithManager(mgr, setup.Env{Workers: 2})
	})
	c := env.Client

	t.Run("live class gets the finalizer without any referrer", func(t *testing.T) {
		ns := controllertest.Namespace(t, c, "mcc")
		class := newClass(ns, "lonely")
		require.NoError(t, c.Create(t.Context(), class))
		controllertest.RequireFinalizer(t, c, class, v1alpha1.MachineFinalizer, true)
	})

	t.Run("a node template the autoscaler cannot scale from zero is named", func(t *testing.T) {
		ctx := t.Context()
		ns := controllertest.Namespace(t, c, "mcc")
		class := newClass(ns, "partial")
		class.NodeTemplate = &v1alpha1.NodeTemplate{
			Capacity:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
			InstanceType: "small", Region: "local",
		}
		require.NoError(t, c.Create(ctx, class))
		cond := requireCondition(t, c, class, v1alpha1.MachineClassNodeTemplateIncomplete)
		assert.Equal(t, metav1.ConditionFalse, cond.Status)
		assert.Contains(t, cond.Message, "nodeTemplate lacks capacity.gpu, zone: the cluster-autoscaler cannot scale")
		controllertest.RequireEvent(t, c, class, v1alpha1.MachineClassNodeTemplateIncomplete, "lacks capacity.gpu, zone")

		patch := client.MergeFrom(class.DeepCopy())
		class.NodeTemplate.Capacity["gpu"] = resource.MustParse("0")
		class.NodeTemplate.Zone = "local-a"
		require.NoError(t, c.Patch(ctx, class, patch))
		cond = requireCondition(t, c, class, v1alpha1.MachineClassNodeTemplateComplete)
		assert.Equal(t, metav1.ConditionTrue, cond.Status)
		controllertest.RequireEvent(t, c, class, v1alpha1.MachineClassNodeTemplateComplete, "can scale up from zero")

		bare := newClass(ns, "bare")
		require.NoError(t, c.Create(ctx, bare))
		cond = requireCondition(t, c, bare, v1alpha1.MachineClassNoNodeTemplate)
		assert.Equal(t, metav1.ConditionFalse, cond.Status)
	})

	t.Run("deletion waits for machines, sets and deployments", func(t *testing.T) {
		ctx := t.Context()
		ns := controllertest.Namespace(t, c, "mcc")
		class := newClass(ns, "used")
		require.NoError(t, c.Create(ctx, class))
		controllertest.RequireFinalizer(t, c, class, v1alpha1.MachineFinalizer, true)

		m := newMachine(ns, "m1", class.Name)
		ms := newMachineSet(ns, "set1", class.Name)
		md := newMachineDeployment(ns, "dep1", class.Name)
		for _, obj := range []client.Object{m, ms, md} {
			require.NoError(t, c.Create(ctx, obj))
		}
		// The cache must have seen the referrers before the class is deleted,
		// or the controller would (rightly, by what it sees) release it.
		controllertest.WaitCached(t, mgr, m, ms, md)

		require.NoError(t, c.Delete(ctx, class))
		controllertest.RequireEvent(t, c, class, machineclass.ReasonDeletionBlocked, "Machine m1, MachineDeployment dep1, MachineSet set1")
		requireStays(t, c, class)

		require.NoError(t, c.Delete(ctx, m))
		require.NoError(t, c.Delete(ctx, ms))
		requireStays(t, c, class)

		require.NoError(t, c.Delete(ctx, md))
		controllertest.RequireGone(t, c, class)
	})

	t.Run("a machine moving to another class releases the old one", func(t *testing.T) {
		ctx := t.Context()
		ns := controllertest.Namespace(t, c, "mcc")
		oldClass, newClass := newClass(ns, "old"), newClass(ns, "new")
		require.NoError(t, c.Create(ctx, oldClass))
		require.NoError(t, c.Create(ctx, newClass))
		m := newMachine(ns, "mover", oldClass.Name)
		require.NoError(t, c.Create(ctx, m))
		controllertest.WaitCached(t, mgr, m)
		controllertest.RequireFinalizer(t, c, oldClass, v1alpha1.MachineFinalizer, true)

		require.NoError(t, c.Delete(ctx, oldClass))
		controllertest.RequireEvent(t, c, oldClass, machineclass.ReasonDeletionBlocked, "Machine mover")

		patch := client.MergeFrom(m.DeepCopy())
		m.Spec.Class.Name = newClass.Name
		require.NoError(t, c.Patch(ctx, m, patch))
		controllertest.RequireGone(t, c, oldClass)

		// The new class is referenced now: its deletion is held.
		require.NoError(t, c.Delete(ctx, newClass))
		controllertest.RequireEvent(t, c, newClass, machineclass.ReasonDeletionBlocked, "Machine mover")
		requireStays(t, c, newClass)
	})

	t.Run("references of another kind or group are not references", func(t *testing.T) {
		ctx := t.Context()
		ns := controllertest.Namespace(t, c, "mcc")
		class := newClass(ns, "aws")
		require.NoError(t, c.Create(ctx, class))
		m := newMachine(ns, "other-kind", class.Name)
		m.Spec.Class.Kind = "AWSMachineClass"
		require.NoError(t, c.Create(ctx, m))
		controllertest.WaitCached(t, mgr, m)
		controllertest.RequireFinalizer(t, c, class, v1alpha1.MachineFinalizer, true)

		require.NoError(t, c.Delete(ctx, class))
		controllertest.RequireGone(t, c, class)
	})

	t.Run("MachinesOfClass maps a class to its live machines", func(t *testing.T) {
		ctx := t.Context()
		ns := controllertest.Namespace(t, c, "mcc")
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

// requireCondition waits until the class's ScaleFromZero condition has
// that reason and returns it.
func requireCondition(t *testing.T, c client.Client, class *v1alpha1.MachineClass, reason string) metav1.Condition {
	t.Helper()
	var cond metav1.Condition
	require.Eventually(t, func() bool {
		got := &v1alpha1.MachineClass{}
		if c.Get(t.Context(), client.ObjectKeyFromObject(class), got) != nil || got.Status == nil {
			return false
		}
		found := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.MachineClassScaleFromZero)
		if found == nil || found.Reason != reason {
			return false
		}
		cond = *found
		return true
	}, 20*time.Second, 50*time.Millisecond, "class %s: no ScaleFromZero condition with reason %s", class.Name, reason)
	return cond
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
		time.Sleep(controllertest.Tick)
	}
}
