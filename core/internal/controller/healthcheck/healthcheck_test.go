package healthcheck_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/healthcheck"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/freeze"
	"github.com/machina-io/machina/core/testenv"
)

// TestMachineHealthCheck runs the controller with two clusters, Machines
// and checks in the control cluster and Nodes in the target cluster, as in
// production. The tests create Machines and Nodes directly and set the
// Nodes' conditions; no other controller runs, so a deleted Machine (it has
// no finalizer) is gone at once.
func TestMachineHealthCheck(t *testing.T) {
	control := testenv.Start(t)
	installRemediationCRDs(t, control)
	gate := &freeze.Gate{}
	target := testenv.Start(t, testenv.WithoutCRDs())
	tcl, err := cluster.New(target.Config, func(o *cluster.Options) { o.Scheme = target.Scheme })
	require.NoError(t, err)
	mgr := controllertest.StartManager(t, control, func(mgr ctrl.Manager) error {
		if err := mgr.Add(tcl); err != nil {
			return err
		}
		return (&healthcheck.Reconciler{Gate: gate}).SetupWithManager(mgr, setup.Env{Target: tcl, Workers: 2})
	})
	require.True(t, tcl.GetCache().WaitForCacheSync(t.Context()), "the target cluster's cache did not sync")
	f := &fixture{t: t, cc: control.Client, tc: target.Client, mgr: mgr}

	t.Run("an unhealthy node past its timeout gets its machine deleted", func(t *testing.T) {
		f := f.sub(t, "timeout")
		gone := f.machine("gone", true, "")
		f.node(gone, corev1.ConditionFalse, 10*time.Minute)
		// Its timeout expires two seconds from now: the check's requeue,
		// not a later event, must catch it.
		soon := f.machine("soon", true, "")
		f.node(soon, corev1.ConditionFalse, time.Minute-2*time.Second)
		fine := f.machine("fine", true, "")
		f.node(fine, corev1.ConditionTrue, 10*time.Minute)
		check := f.check(nil)

		controllertest.RequireGone(t, f.cc, gone)
		controllertest.RequireEvent(t, f.cc, check, healthcheck.ReasonRemediated,
			"Deleted machine "+gone.Name+", its MachineSet replaces it: node timeout-"+gone.Name+" has condition Ready=False for more than 1m0s")
		controllertest.RequireGone(t, f.cc, soon)
		got := f.status(check, func(st machinaio.MachineHealthCheckStatus) bool { return st.ExpectedMachines == 1 })
		assert.Equal(t, int32(1), got.CurrentHealthy)
		f.requireExists(fine)
		cond := meta.FindStatusCondition(got.Conditions, machinaio.RemediationAllowedCondition)
		require.NotNil(t, cond)
		assert.Equal(t, metav1.ConditionTrue, cond.Status)
	})

	t.Run("a partition that makes 60% unhealthy remediates nothing and says why", func(t *testing.T) {
		f := f.sub(t, "partition")
		var machines []*v1alpha1.Machine
		for i := range 5 {
			m := f.machine(fmt.Sprintf("m%d", i), true, "")
			status := corev1.ConditionTrue
			if i < 3 {
				status = corev1.ConditionUnknown
			}
			f.node(m, status, 10*time.Minute)
			machines = append(machines, m)
		}
		forty := intstr.FromString("40%")
		check := f.check(func(c *machinaio.MachineHealthCheck) {
			c.Spec.MaxUnhealthy = &forty
			c.Spec.UnhealthyNodeConditions = append(c.Spec.UnhealthyNodeConditions,
				machinaio.UnhealthyNodeCondition{Type: "Ready", Status: metav1.ConditionUnknown, Timeout: *v1alpha1.NewDuration(time.Minute)})
		})
		want := "Remediation is not allowed: 3 of 5 machines are unhealthy or have no node, beyond maxUnhealthy 40% (2)"
		got := f.status(check, func(st machinaio.MachineHealthCheckStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, machinaio.RemediationAllowedCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == machinaio.ReasonTooManyUnhealthy && c.Message == want
		})
		assert.Equal(t, int32(5), got.ExpectedMachines)
		assert.Equal(t, int32(2), got.CurrentHealthy)
		assert.Equal(t, int32(0), got.RemediationsAllowed)
		controllertest.RequireEvent(t, f.cc, check, healthcheck.ReasonRemediationRestricted, want)
		// The status is written after the remediation of the same run: a
		// machine deleted by it would be gone by now.
		for _, m := range machines {
			f.requireExists(m)
		}

		// The partition heals for one machine: two of five are within 40%,
		// and both are remediated.
		f.setReady(machines[0], corev1.ConditionTrue, time.Second)
		controllertest.RequireGone(t, f.cc, machines[1])
		controllertest.RequireGone(t, f.cc, machines[2])
		for _, m := range []*v1alpha1.Machine{machines[0], machines[3], machines[4]} {
			f.requireExists(m)
		}
	})

	t.Run("skip-remediation takes a machine out of the check", func(t *testing.T) {
		f := f.sub(t, "skip")
		capi := f.machine("capi", true, machinaio.ClusterAPISkipRemediationAnnotation)
		f.node(capi, corev1.ConditionFalse, 10*time.Minute)
		own := f.machine("own", true, machinaio.SkipRemediationAnnotation)
		f.node(own, corev1.ConditionFalse, 10*time.Minute)
		other := f.machine("other", true, "")
		f.node(other, corev1.ConditionFalse, 10*time.Minute)
		check := f.check(nil)

		controllertest.RequireGone(t, f.cc, other)
		f.status(check, func(st machinaio.MachineHealthCheckStatus) bool { return st.ExpectedMachines == 0 })
		f.requireExists(capi)
		f.requireExists(own)
	})

	t.Run("remediate-machine marks a healthy machine unhealthy", func(t *testing.T) {
		f := f.sub(t, "remediate")
		asked := f.machine("asked", true, machinaio.ClusterAPIRemediateMachineAnnotation)
		f.node(asked, corev1.ConditionTrue, 10*time.Minute)
		check := f.check(nil)
		controllertest.RequireGone(t, f.cc, asked)
		controllertest.RequireEvent(t, f.cc, check, healthcheck.ReasonRemediated,
			"the machine has the annotation "+machinaio.ClusterAPIRemediateMachineAnnotation)
	})

	t.Run("nodeStartupTimeout", func(t *testing.T) {
		f := f.sub(t, "startup")
		late := f.machine("late", true, "")
		check := f.check(func(c *machinaio.MachineHealthCheck) {
			c.Spec.NodeStartupTimeout = v1alpha1.NewDuration(3 * time.Second)
		})
		// Before the timeout the machine is not healthy, and stays.
		got := f.status(check, func(st machinaio.MachineHealthCheckStatus) bool { return st.ExpectedMachines == 1 })
		assert.Equal(t, int32(0), got.CurrentHealthy)
		controllertest.RequireGone(t, f.cc, late)
		controllertest.RequireEvent(t, f.cc, check, healthcheck.ReasonRemediated, "it has no node 3s after its creation")

		// 0 disables it: a machine created long enough ago stays.
		g := f.sub(t, "nostartup")
		kept := g.machine("kept", true, "")
		check = g.check(func(c *machinaio.MachineHealthCheck) { c.Spec.NodeStartupTimeout = v1alpha1.NewDuration(0) })
		g.status(check, func(st machinaio.MachineHealthCheckStatus) bool { return st.ExpectedMachines == 1 })
		require.Eventually(t, func() bool { return time.Since(kept.CreationTimestamp.Time) > 4*time.Second }, 10*time.Second, 100*time.Millisecond)
		// Touch the machine so that the check runs again after that.
		g.annotate(kept, "test.machina.io/touched")
		g.status(check, func(st machinaio.MachineHealthCheckStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, machinaio.RemediationAllowedCondition)
			return c != nil && c.Status == metav1.ConditionTrue
		})
		g.requireExists(kept)
	})

	t.Run("a range the schema lets through but cannot hold is refused", func(t *testing.T) {
		f := f.sub(t, "range")
		m := f.machine("m", true, "")
		f.node(m, corev1.ConditionFalse, 10*time.Minute)
		check := f.check(func(c *machinaio.MachineHealthCheck) { c.Spec.UnhealthyRange = "[3-1]" })
		f.status(check, func(st machinaio.MachineHealthCheckStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, machinaio.RemediationAllowedCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == machinaio.ReasonInvalidSpec &&
				c.Message == `spec.unhealthyRange "[3-1]" has its minimum above its maximum`
		})
		controllertest.RequireEvent(t, f.cc, check, healthcheck.ReasonInvalidSpec, "nothing is remediated")
		f.requireExists(m)
	})

	t.Run("nothing is remediated while the API servers are unreachable", func(t *testing.T) {
		f := f.sub(t, "frozen")
		require.True(t, gate.Freeze("test outage", time.Now()))
		t.Cleanup(func() { gate.Unfreeze() })
		m := f.machine("m", true, "")
		f.node(m, corev1.ConditionFalse, 10*time.Minute)
		check := f.check(nil)
		f.status(check, func(st machinaio.MachineHealthCheckStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, machinaio.RemediationAllowedCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == machinaio.ReasonFrozen
		})
		f.requireExists(m)
		// The gate opens without a grace period: the unfreeze source brings
		// the check back at once.
		require.True(t, gate.Unfreeze())
		controllertest.RequireGone(t, f.cc, m)
	})

	t.Run("external remediation", func(t *testing.T) { externalRemediation(t, f) })

	t.Run("a machine no MachineSet controls is not remediated", func(t *testing.T) {
		f := f.sub(t, "bare")
		bare := f.machine("bare", false, "")
		f.node(bare, corev1.ConditionFalse, 10*time.Minute)
		f.check(nil)
		controllertest.RequireEvent(t, f.cc, bare, healthcheck.ReasonRemediationNotSupported, "no MachineSet controls it")
		f.requireExists(bare)
	})
}

// fixture creates the objects of one subtest: its namespace, machines
// labelled for its check, and their Nodes.
type fixture struct {
	t      *testing.T
	cc, tc client.Client
	mgr    ctrl.Manager
	ns     string
	prefix string
}

func (f *fixture) sub(t *testing.T, prefix string) *fixture {
	return &fixture{t: t, cc: f.cc, tc: f.tc, mgr: f.mgr, ns: controllertest.Namespace(t, f.cc, prefix), prefix: prefix}
}

// machine creates a Running machine selected by the check (a MachineSet
// controls it when owned), with annotation set when not empty. Its Node,
// created by node, has the machine's name with the subtest's prefix.
func (f *fixture) machine(name string, owned bool, annotation string) *v1alpha1.Machine {
	f.t.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: map[string]string{"pool": "workers"}},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "c"}},
	}
	if owned {
		yes := true
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet",
			Name: "workers", UID: types.UID("set-" + f.ns), Controller: &yes}}
	}
	if annotation != "" {
		m.Annotations = map[string]string{annotation: ""}
	}
	require.NoError(f.t, f.cc.Create(f.t.Context(), m))
	return m
}

// node creates the machine's Node with Ready=status since ago, names it on
// the machine and makes the machine Running.
func (f *fixture) node(m *v1alpha1.Machine, status corev1.ConditionStatus, ago time.Duration) {
	f.t.Helper()
	ctx := f.t.Context()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: f.prefix + "-" + m.Name}}
	require.NoError(f.t, f.tc.Create(ctx, n))
	f.setReady(m, status, ago)

	patch := client.MergeFrom(m.DeepCopy())
	m.Labels[v1alpha1.NodeLabelKey] = n.Name
	require.NoError(f.t, f.cc.Patch(ctx, m, patch))
	m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineRunning, LastUpdateTime: metav1.Now()}
	require.NoError(f.t, f.cc.Status().Update(ctx, m))
	controllertest.WaitCached(f.t, f.mgr, m)
}

// setReady sets the Ready condition of the machine's Node, changed ago.
func (f *fixture) setReady(m *v1alpha1.Machine, status corev1.ConditionStatus, ago time.Duration) {
	f.t.Helper()
	n := &corev1.Node{}
	require.NoError(f.t, f.tc.Get(f.t.Context(), client.ObjectKey{Name: f.prefix + "-" + m.Name}, n))
	since := metav1.NewTime(time.Now().Add(-ago))
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastTransitionTime: since, LastHeartbeatTime: since}}
	require.NoError(f.t, f.tc.Status().Update(f.t.Context(), n))
}

func (f *fixture) annotate(m *v1alpha1.Machine, key string) {
	f.t.Helper()
	patch := client.MergeFrom(m.DeepCopy())
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = time.Now().String()
	require.NoError(f.t, f.cc.Patch(f.t.Context(), m, patch))
}

// check creates the subtest's check: machines labelled pool=workers,
// unhealthy after Ready=False for a minute; mutate changes it first.
func (f *fixture) check(mutate func(*machinaio.MachineHealthCheck)) *machinaio.MachineHealthCheck {
	f.t.Helper()
	c := &machinaio.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "workers"},
		Spec: machinaio.MachineHealthCheckSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "workers"}},
			UnhealthyNodeConditions: []machinaio.UnhealthyNodeCondition{
				{Type: "Ready", Status: metav1.ConditionFalse, Timeout: *v1alpha1.NewDuration(time.Minute)},
			},
		},
	}
	if mutate != nil {
		mutate(c)
	}
	require.NoError(f.t, f.cc.Create(f.t.Context(), c))
	return c
}

// status waits until the check's status satisfies ok and returns it.
func (f *fixture) status(c *machinaio.MachineHealthCheck, ok func(machinaio.MachineHealthCheckStatus) bool) machinaio.MachineHealthCheckStatus {
	f.t.Helper()
	got := &machinaio.MachineHealthCheck{}
	require.Eventually(f.t, func() bool {
		require.NoError(f.t, f.cc.Get(f.t.Context(), client.ObjectKeyFromObject(c), got))
		return got.Status.ObservedGeneration == got.Generation && ok(got.Status)
	}, controllertest.WaitFor, controllertest.Tick, "status never matched; last %+v", &got.Status)
	return got.Status
}

func (f *fixture) requireExists(m *v1alpha1.Machine) {
	f.t.Helper()
	err := f.cc.Get(f.t.Context(), client.ObjectKeyFromObject(m), &v1alpha1.Machine{})
	require.False(f.t, apierrors.IsNotFound(err), "machine %s was deleted", m.Name)
	require.NoError(f.t, err)
}
