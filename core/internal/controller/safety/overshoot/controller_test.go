package overshoot_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/safety/overshoot"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

const period = 100 * time.Millisecond

// quiet is how long a test watches for something that must not happen:
// several periods.
const quiet = 10 * period

func TestOvershootFreeze(t *testing.T) {
	env := testenv.Start(t)

	t.Run("standalone set freezes at 2*replicas+safetyUp and unfreezes at safetyDown below", func(t *testing.T) {
		f := start(t, env, 2, 1)
		ms := f.machineSet("workers", 1, nil) // higher 4, lower 3
		f.machines(ms, 3)
		f.requireStays(ms, false)

		m4 := f.machines(ms, 1)[0]
		f.requireFrozen(ms, true)
		cond := f.setCondition(ms)
		require.NotNil(t, cond)
		assert.Equal(t, v1alpha1.OverShootingReplicaCount, cond.Reason)
		assert.Equal(t, v1alpha1.ConditionTrue, cond.Status)
		assert.Contains(t, cond.Message, "4 machines")
		f.requireEvents(ms, overshoot.ReasonFrozeMachineSet, 1)

		require.NoError(t, f.c.Delete(context.Background(), m4))
		f.requireFrozen(ms, false)
		assert.Nil(t, f.setCondition(ms))
		f.requireEvents(ms, overshoot.ReasonUnfrozeMachineSet, 1)
		f.requireEvents(ms, overshoot.ReasonFrozeMachineSet, 1)
	})

	t.Run("set of a deployment: MCM's scenario with replicas 2, maxSurge 2", func(t *testing.T) {
		f := start(t, env, 2, 1)
		md := f.deployment("dep", 2, intstr.FromInt32(2))
		ms := f.machineSet("dep-abc", 2, md) // higher = 2 + 2 + 2 = 6, lower 5
		machines := f.machines(ms, 5)
		f.requireStays(ms, false)

		machines = append(machines, f.machines(ms, 1)...)
		f.requireFrozen(ms, true)
		f.requireDeploymentFrozen(md, true)
		c := f.deploymentCondition(md)
		require.NotNil(t, c)
		assert.Equal(t, v1alpha1.OverShootingReplicaCount, c.Reason)

		require.NoError(t, f.c.Delete(context.Background(), machines[0]))
		f.requireFrozen(ms, false)
		f.requireDeploymentFrozen(md, false)
		assert.Nil(t, f.deploymentCondition(md))
		// As MCM's integration test counts: one freeze and one unfreeze.
		f.requireEvents(ms, overshoot.ReasonFrozeMachineSet, 1)
		f.requireEvents(ms, overshoot.ReasonUnfrozeMachineSet, 1)
	})

	t.Run("a deployment's replicas move the threshold", func(t *testing.T) {
		f := start(t, env, 2, 1)
		md := f.deployment("grow", 1, intstr.FromInt32(1))
		ms := f.machineSet("grow-abc", 1, md) // higher = 1 + 1 + 2 = 4
		f.machines(ms, 4)
		f.requireFrozen(ms, true)

		// Scaling the deployment up to 3 raises the limit to 6: unfrozen.
		patch := client.MergeFrom(md.DeepCopy())
		md.Spec.Replicas = 3
		require.NoError(t, f.c.Patch(context.Background(), md, patch))
		f.requireFrozen(ms, false)
		f.requireDeploymentFrozen(md, false)
	})

	t.Run("the unfreeze annotation lifts a freeze the hysteresis would keep", func(t *testing.T) {
		f := start(t, env, 2, 2)
		ms := f.machineSet("held", 1, nil) // higher 4, lower 2
		machines := f.machines(ms, 4)
		f.requireFrozen(ms, true)
		require.NoError(t, f.c.Delete(context.Background(), machines[0]))
		f.requireStays(ms, true) // 3 machines: between the thresholds

		f.annotate(ms)
		f.requireFrozen(ms, false)
		f.requireNotAnnotated(ms)
		f.requireStays(ms, false)
		f.requireEvents(ms, overshoot.ReasonUnfrozeMachineSet, 1)

		// A set that still overshoots is frozen again at once.
		f.machines(ms, 1)
		f.requireFrozen(ms, true)
		f.annotate(ms)
		f.requireNotAnnotated(ms)
		f.requireEvents(ms, overshoot.ReasonUnfrozeMachineSet, 2)
		f.requireEvents(ms, overshoot.ReasonFrozeMachineSet, 3)
		f.requireFrozen(ms, true)
	})

	t.Run("the unfreeze annotation on a deployment unfreezes its sets", func(t *testing.T) {
		f := start(t, env, 2, 2)
		md := f.deployment("held-dep", 1, intstr.FromInt32(0))
		ms := f.machineSet("held-dep-abc", 1, md) // higher = 1 + 0 + 2 = 3, lower 1
		machines := f.machines(ms, 3)
		f.requireFrozen(ms, true)
		f.requireDeploymentFrozen(md, true)
		require.NoError(t, f.c.Delete(context.Background(), machines[0]))
		f.requireStays(ms, true)

		f.annotate(md)
		f.requireFrozen(ms, false)
		f.requireDeploymentFrozen(md, false)
		f.requireNotAnnotated(md)
		f.requireNotAnnotated(ms)
	})
}

type fixture struct {
	t  *testing.T
	c  client.Client
	ns string
	n  int
}

func start(t *testing.T, env *testenv.Env, up, down int32) *fixture {
	t.Helper()
	mgr := controllertest.NewManager(t, env.Config, env.Scheme)
	r := &overshoot.Reconciler{SafetyUp: up, SafetyDown: down, Period: period}
	require.NoError(t, r.SetupWithManager(mgr, setup.Env{Workers: 2}))
	controllertest.Start(t, mgr)
	return &fixture{t: t, c: env.Client, ns: controllertest.Namespace(t, env.Client, "overshoot")}
}

func template(app string) v1alpha1.MachineTemplateSpec {
	return v1alpha1.MachineTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
	}
}

func (f *fixture) deployment(name string, replicas int32, surge intstr.IntOrString) *v1alpha1.MachineDeployment {
	f.t.Helper()
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: template(name),
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type: v1alpha1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{UpdateConfiguration: v1alpha1.UpdateConfiguration{
					MaxSurge: &surge,
				}},
			},
		},
	}
	require.NoError(f.t, f.c.Create(context.Background(), md))
	return md
}

func (f *fixture) machineSet(name string, replicas int32, md *v1alpha1.MachineDeployment) *v1alpha1.MachineSet {
	f.t.Helper()
	app := name
	if md != nil {
		app = md.Name
	}
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}},
			Template: template(app),
		},
	}
	if md != nil {
		ms.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(md, v1alpha1.GroupVersion.WithKind("MachineDeployment"))}
	}
	require.NoError(f.t, f.c.Create(context.Background(), ms))
	return ms
}

// machines creates n machines controlled by ms.
func (f *fixture) machines(ms *v1alpha1.MachineSet, n int) []*v1alpha1.Machine {
	f.t.Helper()
	var out []*v1alpha1.Machine
	for range n {
		f.n++
		m := &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{
				Namespace:       f.ns,
				Name:            fmt.Sprintf("%s-%d", ms.Name, f.n),
				Labels:          ms.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ms, v1alpha1.GroupVersion.WithKind("MachineSet"))},
			},
			Spec: ms.Spec.Template.Spec,
		}
		require.NoError(f.t, f.c.Create(context.Background(), m))
		out = append(out, m)
	}
	return out
}

func (f *fixture) annotate(obj client.Object) {
	f.t.Helper()
	require.NoError(f.t, f.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[v1alpha1.UnfreezeAnnotation] = "True"
	obj.SetAnnotations(a)
	require.NoError(f.t, f.c.Patch(context.Background(), obj, patch))
}

func (f *fixture) frozen(obj client.Object) bool {
	require.NoError(f.t, f.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	return obj.GetLabels()[v1alpha1.FreezeLabel] == v1alpha1.FreezeValue
}

// requireFrozen waits until ms's freeze label and Frozen condition agree
// with want.
func (f *fixture) requireFrozen(ms *v1alpha1.MachineSet, want bool) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		return f.frozen(ms) == want && (f.setCondition(ms) != nil) == want
	}, controllertest.WaitFor, controllertest.Tick, "machine set %s: frozen should be %v", ms.Name, want)
}

func (f *fixture) requireDeploymentFrozen(md *v1alpha1.MachineDeployment, want bool) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		return f.frozen(md) == want && (f.deploymentCondition(md) != nil) == want
	}, controllertest.WaitFor, controllertest.Tick, "machine deployment %s: frozen should be %v", md.Name, want)
}

// requireStays checks that ms's freeze state stays want for a while.
func (f *fixture) requireStays(ms *v1alpha1.MachineSet, want bool) {
	f.t.Helper()
	deadline := time.Now().Add(quiet)
	for time.Now().Before(deadline) {
		require.Equal(f.t, want, f.frozen(ms), "machine set %s: frozen changed", ms.Name)
		time.Sleep(controllertest.Tick)
	}
}

func (f *fixture) requireNotAnnotated(obj client.Object) {
	f.t.Helper()
	require.Eventually(f.t, func() bool {
		require.NoError(f.t, f.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
		_, ok := obj.GetAnnotations()[v1alpha1.UnfreezeAnnotation]
		return !ok
	}, controllertest.WaitFor, controllertest.Tick)
}

func (f *fixture) setCondition(ms *v1alpha1.MachineSet) *v1alpha1.MachineSetCondition {
	for i, c := range ms.Status.Conditions {
		if c.Type == v1alpha1.MachineSetFrozen {
			return &ms.Status.Conditions[i]
		}
	}
	return nil
}

func (f *fixture) deploymentCondition(md *v1alpha1.MachineDeployment) *v1alpha1.MachineDeploymentCondition {
	for i, c := range md.Status.Conditions {
		if c.Type == v1alpha1.MachineDeploymentFrozen {
			return &md.Status.Conditions[i]
		}
	}
	return nil
}

// requireEvents waits until ms has n events of reason (counting repeats
// folded into one Event object), and checks that there are no more.
func (f *fixture) requireEvents(ms *v1alpha1.MachineSet, reason string, n int) {
	f.t.Helper()
	count := func() int {
		list := &corev1.EventList{}
		require.NoError(f.t, f.c.List(context.Background(), list, client.InNamespace(f.ns)))
		total := 0
		for _, e := range list.Items {
			if e.InvolvedObject.Kind == "MachineSet" && e.InvolvedObject.Name == ms.Name && e.Reason == reason {
				total += int(max(e.Count, 1))
			}
		}
		return total
	}
	require.Eventually(f.t, func() bool { return count() >= n }, controllertest.WaitFor, controllertest.Tick,
		"machine set %s: want %d %s events", ms.Name, n, reason)
	assert.Equal(f.t, n, count(), "machine set %s: %s events", ms.Name, reason)
}
