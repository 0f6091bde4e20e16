package machinedeployment_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/machinedeployment"
	"github.com/machina-io/machina/core/internal/controller/machineset"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/freeze"
	"github.com/machina-io/machina/core/testenv"
)

const (
	waitTimeout = 60 * time.Second
	poll        = 50 * time.Millisecond
)

// suite is one API server running the MachineSet and MachineDeployment
// controllers, with the same cluster as control and target cluster; every
// subtest works in a namespace of its own.
type suite struct {
	env *testenv.Env
	c   client.Client
	// gate is the MachineDeployment controller's freeze gate; the MachineSet
	// controller has none, so that a test sees what the deployment does.
	gate *freeze.Gate
}

func TestMachineDeploymentController(t *testing.T) {
	env := testenv.Start(t)
	gate := &freeze.Gate{}
	controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		if err := (&machineset.Reconciler{Target: mgr.GetClient(), Pods: mgr.GetAPIReader()}).SetupWithManager(mgr, setup.Env{Workers: 4}); err != nil {
			return err
		}
		return (&machinedeployment.Reconciler{
			Target:  mgr.GetClient(),
			Pods:    mgr.GetAPIReader(),
			Gate:    gate,
			Options: machinedeployment.DefaultOptions(),
		}).SetupWithManager(mgr, setup.Env{Workers: 4})
	})
	s := &suite{env: env, c: env.Client, gate: gate}

	t.Run("scales 0 to 5 to 2 to 0", s.testScale)
	t.Run("rolling update of 6 stays within maxSurge 2 and maxUnavailable 1", s.testRollingUpdate)
	t.Run("recreate deletes all old machines before creating new ones", s.testRecreate)
	t.Run("pause stops a rollout and resume finishes it", s.testPauseResume)
	t.Run("a stuck rollout reports ProgressDeadlineExceeded", s.testProgressDeadline)
	t.Run("kubectl scale works through the scale subresource", s.testKubectlScale)
	t.Run("trigger-deletion annotation deletes exactly the named machines", s.testTriggerDeletion)
	t.Run("a plain trigger-deletion name takes the scaler's decision time", s.testTriggerDeletionScalerTime)
	t.Run("scaling during a rollout is proportional", s.testProportionalScaling)
	t.Run("rollbackTo returns to an earlier template", s.testRollback)
	t.Run("rolloutAfter replaces every machine once it passes, and only then", s.testRolloutAfter)
	t.Run("machines older than expireAfter are replaced within maxUnavailable", s.testExpireAfter)
	t.Run("an expired machine whose node asks not to be disrupted waits", s.testExpiryHonoursDoNotDisrupt)
	t.Run("a rolling update passes over a node that asks not to be disrupted", s.testRollingUpdateHonoursDoNotDisrupt)
	t.Run("a large scale-down passes over a node that asks not to be disrupted", s.testLargeScaleDownHonoursDoNotDisrupt)
	t.Run("a drifted machine is replaced only with replaceDrifted", s.testReplaceDrifted)
	t.Run("a disruption budget holds a rollout back", s.testRolloutBudget)
	t.Run("a disruption budget paces Recreate", s.testRecreateBudget)
	t.Run("the API server freeze stops scaling and rollouts until it ends", s.testAPIServerFreeze)
	t.Run("an out-of-range maxSurge or maxUnavailable is refused with a condition", s.testOutOfRangeStrategy)
	t.Run("deleting the deployment deletes machine sets and machines", s.testDelete)
}

func (s *suite) namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mcd-" + rand.String(6)}}
	require.NoError(t, s.c.Create(context.Background(), ns))
	return ns.Name
}

// joiner starts a Joiner for the namespace that also creates Nodes.
func (s *suite) joiner(t *testing.T, ns string, delay time.Duration) *controllertest.Joiner {
	j := &controllertest.Joiner{Client: s.c, Nodes: s.c, Namespace: ns, Delay: delay}
	j.Start(t)
	return j
}

func newDeployment(ns, name string, replicas int32) *v1alpha1.MachineDeployment {
	d := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": name}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "class-v1"}},
			},
		},
	}
	d.Spec.Strategy.Type = v1alpha1.RollingUpdateMachineDeploymentStrategyType
	return d
}

// setRollingBounds gives d's RollingUpdate strategy maxSurge and
// maxUnavailable.
func setRollingBounds(d *v1alpha1.MachineDeployment, surge, unavailable int32) {
	s, u := intstr.FromInt32(surge), intstr.FromInt32(unavailable)
	d.Spec.Strategy.RollingUpdate = &v1alpha1.RollingUpdateMachineDeployment{}
	d.Spec.Strategy.RollingUpdate.MaxSurge = &s
	d.Spec.Strategy.RollingUpdate.MaxUnavailable = &u
}

func (s *suite) get(t *testing.T, obj client.Object) {
	t.Helper()
	require.NoError(t, s.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
}

// update applies change to a fresh copy of the deployment, retrying on
// conflicts with the controller's writes.
func (s *suite) update(t *testing.T, d *v1alpha1.MachineDeployment, change func(*v1alpha1.MachineDeployment)) {
	t.Helper()
	require.Eventually(t, func() bool {
		cur := &v1alpha1.MachineDeployment{}
		if err := s.c.Get(context.Background(), client.ObjectKeyFromObject(d), cur); err != nil {
			return false
		}
		change(cur)
		if err := s.c.Update(context.Background(), cur); err != nil {
			return false
		}
		*d = *cur
		return true
	}, waitTimeout, poll)
}

func (s *suite) machines(t *testing.T, ns string) []v1alpha1.Machine {
	t.Helper()
	list := &v1alpha1.MachineList{}
	require.NoError(t, s.c.List(context.Background(), list, client.InNamespace(ns)))
	return list.Items
}

func (s *suite) sets(t *testing.T, ns string) []v1alpha1.MachineSet {
	t.Helper()
	list := &v1alpha1.MachineSetList{}
	require.NoError(t, s.c.List(context.Background(), list, client.InNamespace(ns)))
	return list.Items
}

// waitComplete waits until the deployment reports all replicas updated and
// available for its current generation, with one machine set holding them all
// and exactly that many machines in the namespace.
func (s *suite) waitComplete(t *testing.T, d *v1alpha1.MachineDeployment) {
	t.Helper()
	require.Eventually(t, func() bool {
		cur := &v1alpha1.MachineDeployment{}
		if err := s.c.Get(context.Background(), client.ObjectKeyFromObject(d), cur); err != nil {
			return false
		}
		r := cur.Spec.Replicas
		st := cur.Status
		if st.ObservedGeneration != cur.Generation || st.Replicas != r || st.UpdatedReplicas != r || st.AvailableReplicas != r {
			return false
		}
		return len(s.machines(t, d.Namespace)) == int(r)
	}, waitTimeout, poll, "deployment %s did not complete", d.Name)
	s.get(t, d)
}

func live(m *v1alpha1.Machine) bool { return m.DeletionTimestamp == nil }

func running(m *v1alpha1.Machine) bool {
	return live(m) && m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning
}

func hashes(st controllertest.MachineState) map[string]int {
	out := map[string]int{}
	for _, m := range st {
		if live(m) {
			out[m.Labels[v1alpha1.DefaultMachineDeploymentUniqueLabelKey]]++
		}
	}
	return out
}

func condition(d *v1alpha1.MachineDeployment, t v1alpha1.MachineDeploymentConditionType) *v1alpha1.MachineDeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

func (s *suite) testScale(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	d := newDeployment(ns, "scale", 0)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)

	prev := int32(0)
	for _, want := range []int32{5, 2, 0} {
		mark := obs.Mark()
		s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Replicas = want })
		s.waitComplete(t, d)
		hi := max(prev, want)
		for i, st := range obs.StatesSince(mark) {
			assert.LessOrEqual(t, st.Count(live), int(hi), "scale %d->%d: state %d", prev, want, i)
			assert.GreaterOrEqual(t, st.Count(live), int(min(prev, want)), "scale %d->%d: state %d", prev, want, i)
		}
		prev = want
	}
	assert.Len(t, s.sets(t, ns), 1, "scaling does not create machine sets")
	assert.Equal(t, "1", d.Annotations[v1alpha1.RevisionAnnotation])
	assert.Contains(t, d.Finalizers, v1alpha1.MachineFinalizer)
	assert.Equal(t, "pool=scale", d.Status.LabelSelector)
}

func (s *suite) testRollingUpdate(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	j := s.joiner(t, ns, 300*time.Millisecond)
	deadline := int32(600)
	d := newDeployment(ns, "roll", 6)
	d.Spec.ProgressDeadlineSeconds = &deadline
	setRollingBounds(d, 2, 1)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	oldSet := s.sets(t, ns)
	require.Len(t, oldSet, 1)
	oldNames := map[string]bool{}
	for _, m := range s.machines(t, ns) {
		oldNames[m.Name] = true
	}

	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	require.Eventually(t, func() bool { return obs.Current().Count(running) == 6 }, waitTimeout, poll)
	mark := obs.Mark()

	// Hold new machines back so that the rollout stops half-way, with old
	// and new machines side by side, and check the nodes are marked.
	j.Pause()
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "class-v2" })
	require.Eventually(t, func() bool {
		var newMachines int
		for _, m := range s.machines(t, ns) {
			if !oldNames[m.Name] {
				newMachines++
			}
		}
		return newMachines >= 2
	}, waitTimeout, poll, "the rollout did not surge")
	require.Eventually(t, func() bool {
		for _, m := range s.machines(t, ns) {
			if !oldNames[m.Name] || m.DeletionTimestamp != nil {
				continue
			}
			n := &corev1.Node{}
			if err := s.c.Get(ctx, client.ObjectKey{Name: m.Name}, n); err != nil {
				return false
			}
			if n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation] != "true" || n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation] != "true" {
				return false
			}
			if !hasRolloutTaint(n) {
				return false
			}
		}
		return true
	}, waitTimeout, poll, "old nodes were not tainted and annotated during the rollout")
	j.Resume()
	s.waitComplete(t, d)

	states := obs.StatesSince(mark)
	require.NotEmpty(t, states)
	sawBoth := false
	for i, st := range states {
		assert.LessOrEqual(t, st.Count(live), 8, "state %d: more than replicas+maxSurge machines: %v", i, st.Names())
		assert.GreaterOrEqual(t, st.Count(running), 5, "state %d: fewer than replicas-maxUnavailable available: %v", i, st.Names())
		sawBoth = sawBoth || len(hashes(st)) == 2
	}
	assert.True(t, sawBoth, "old and new machines should have coexisted during a rolling update")

	// The end state: six new machines, the old set empty and kept as history.
	for _, m := range s.machines(t, ns) {
		assert.False(t, oldNames[m.Name], "old machine %s survived", m.Name)
		assert.Equal(t, "class-v2", m.Spec.Class.Name)
	}
	sets := s.sets(t, ns)
	require.Len(t, sets, 2)
	revisions := map[string]int32{}
	for _, ms := range sets {
		revisions[ms.Annotations[v1alpha1.RevisionAnnotation]] = ms.Spec.Replicas
		assert.Equal(t, "6", ms.Annotations[v1alpha1.DesiredReplicasAnnotation])
		assert.Equal(t, "8", ms.Annotations[v1alpha1.MaxReplicasAnnotation])
		assert.NotEmpty(t, ms.Labels[v1alpha1.DefaultMachineDeploymentUniqueLabelKey])
	}
	assert.Equal(t, map[string]int32{"1": 0, "2": 6}, revisions)
	assert.Equal(t, "2", d.Annotations[v1alpha1.RevisionAnnotation])
	require.NotNil(t, condition(d, v1alpha1.MachineDeploymentProgressing))
	assert.Equal(t, machinedeployment.ReasonNewMachineSetAvailable, condition(d, v1alpha1.MachineDeploymentProgressing).Reason)
	assert.Equal(t, v1alpha1.ConditionTrue, condition(d, v1alpha1.MachineDeploymentAvailable).Status)

	// After the rollout the new nodes carry neither the taint nor the
	// autoscaler annotation.
	require.Eventually(t, func() bool {
		for _, m := range s.machines(t, ns) {
			n := &corev1.Node{}
			if err := s.c.Get(ctx, client.ObjectKey{Name: m.Name}, n); err != nil {
				return false
			}
			if _, ok := n.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation]; ok || hasRolloutTaint(n) {
				return false
			}
		}
		return true
	}, waitTimeout, poll, "rollout marks were not removed")
}

// hasRolloutTaint reports whether the node carries the PreferNoSchedule taint
// of a rolling update. (The API server adds a not-ready taint of its own to
// new nodes, so the taint list is not otherwise empty.)
func hasRolloutTaint(n *corev1.Node) bool {
	for _, taint := range n.Spec.Taints {
		if taint.Key == v1alpha1.PreferNoScheduleTaintKey && taint.Value == "True" && taint.Effect == corev1.TaintEffectPreferNoSchedule {
			return true
		}
	}
	return false
}

func (s *suite) testRecreate(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 100*time.Millisecond)
	zero := int32(0)
	d := newDeployment(ns, "recreate", 3)
	d.Spec.Strategy.Type = v1alpha1.RecreateMachineDeploymentStrategyType
	d.Spec.RevisionHistoryLimit = &zero
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)

	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	require.Eventually(t, func() bool { return obs.Current().Count(live) == 3 }, waitTimeout, poll)
	mark := obs.Mark()
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "class-v2" })
	s.waitComplete(t, d)

	sawEmpty := false
	for i, st := range obs.StatesSince(mark) {
		assert.LessOrEqual(t, len(hashes(st)), 1, "state %d has old and new machines at once: %v", i, st.Names())
		sawEmpty = sawEmpty || len(st) == 0
	}
	assert.True(t, sawEmpty, "Recreate passes through a state with no machines")
	for _, m := range s.machines(t, ns) {
		assert.Equal(t, "class-v2", m.Spec.Class.Name)
	}
	// revisionHistoryLimit 0: the old set is deleted once the rollout is done.
	require.Eventually(t, func() bool { return len(s.sets(t, ns)) == 1 }, waitTimeout, poll, "old machine set not cleaned up")
}

func (s *suite) testPauseResume(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	j := s.joiner(t, ns, 0)
	deadline := int32(600)
	d := newDeployment(ns, "pause", 4)
	d.Spec.ProgressDeadlineSeconds = &deadline
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)

	// Start a rollout that cannot finish yet (new machines do not join),
	// then pause it.
	j.Pause()
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "class-v2" })
	require.Eventually(t, func() bool { return len(s.sets(t, ns)) == 2 }, waitTimeout, poll)
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Paused = true })
	require.Eventually(t, func() bool {
		s.get(t, d)
		c := condition(d, v1alpha1.MachineDeploymentProgressing)
		return d.Status.ObservedGeneration == d.Generation && c != nil && c.Reason == machinedeployment.ReasonDeploymentPaused
	}, waitTimeout, poll, "pause not reported")
	sizes := func() map[string]int32 {
		out := map[string]int32{}
		for _, ms := range s.sets(t, ns) {
			out[ms.Name] = ms.Spec.Replicas
		}
		return out
	}
	paused := sizes()

	// New machines join now; a running rollout would take the next steps.
	// Once the deployment's status shows them, the controller has synced with
	// them and must not have moved.
	j.Resume()
	require.Eventually(t, func() bool {
		s.get(t, d)
		var want int32
		for _, ms := range s.sets(t, ns) {
			want += ms.Spec.Replicas
		}
		return d.Status.AvailableReplicas == want && d.Status.ReadyReplicas == want
	}, waitTimeout, poll, "machines did not become available")
	assert.Equal(t, paused, sizes(), "a paused deployment must not roll")

	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Paused = false })
	s.waitComplete(t, d)
	for _, m := range s.machines(t, ns) {
		assert.Equal(t, "class-v2", m.Spec.Class.Name)
	}
	assert.Equal(t, machinedeployment.ReasonNewMachineSetAvailable, condition(d, v1alpha1.MachineDeploymentProgressing).Reason)
}

func (s *suite) testProgressDeadline(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	j := s.joiner(t, ns, 0)
	j.Pause() // no machine ever joins
	deadline := int32(2)
	d := newDeployment(ns, "stuck", 2)
	d.Spec.ProgressDeadlineSeconds = &deadline
	created := time.Now()
	require.NoError(t, s.c.Create(ctx, d))
	require.Eventually(t, func() bool {
		s.get(t, d)
		c := condition(d, v1alpha1.MachineDeploymentProgressing)
		return c != nil && c.Reason == machinedeployment.ReasonProgressDeadlineExceeded && c.Status == v1alpha1.ConditionFalse
	}, waitTimeout, poll, "deadline not reported")
	assert.GreaterOrEqual(t, time.Since(created), 2*time.Second, "reported before the deadline")
	assert.Equal(t, v1alpha1.ConditionFalse, condition(d, v1alpha1.MachineDeploymentAvailable).Status)

	// Once machines join, the rollout progresses again and completes.
	j.Resume()
	s.waitComplete(t, d)
	require.Eventually(t, func() bool {
		s.get(t, d)
		return condition(d, v1alpha1.MachineDeploymentProgressing).Reason == machinedeployment.ReasonNewMachineSetAvailable
	}, waitTimeout, poll)
}

func (s *suite) testKubectlScale(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "kubectl", 1)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)

	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	for _, want := range []int32{4, 2} {
		out, err := exec.Command(kubectl, "--kubeconfig", s.env.Kubeconfig, "-n", ns,
			"scale", "machinedeployment/kubectl", fmt.Sprintf("--replicas=%d", want)).CombinedOutput()
		require.NoError(t, err, string(out))
		assert.Contains(t, string(out), "scaled")
		require.Eventually(t, func() bool {
			s.get(t, d)
			return d.Spec.Replicas == want
		}, waitTimeout, poll)
		s.waitComplete(t, d)
	}
	out, err := exec.Command(kubectl, "--kubeconfig", s.env.Kubeconfig, "-n", ns,
		"get", "machinedeployment/kubectl", "--subresource=scale", "-o", "jsonpath={.status.replicas} {.status.selector}").CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Equal(t, "2 pool=kubectl", strings.TrimSpace(string(out)))
}

func (s *suite) testTriggerDeletion(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "ca", 5)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	all := s.machines(t, ns)
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	// Two machines the autoscaler picks: one in its format, one plain.
	doomed := map[string]bool{all[1].Name: true, all[3].Name: true}
	value := all[1].Name + "~2026-01-01T10:00:00Z," + all[3].Name

	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	require.Eventually(t, func() bool { return obs.Current().Count(live) == 5 }, waitTimeout, poll)
	mark := obs.Mark()
	// One update, as the autoscaler's mcm provider does it.
	s.update(t, d, func(d *v1alpha1.MachineDeployment) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[v1alpha1.TriggerDeletionByMCMAnnotation] = value
		d.Spec.Replicas = 3
	})
	s.waitComplete(t, d)

	left := s.machines(t, ns)
	require.Len(t, left, 3)
	for _, m := range left {
		assert.False(t, doomed[m.Name], "machine %s should have been deleted", m.Name)
	}
	for i, st := range obs.StatesSince(mark) {
		for _, m := range all {
			if !doomed[m.Name] {
				_, ok := st[m.Name]
				assert.True(t, ok, "state %d: machine %s was deleted but not named", i, m.Name)
			}
		}
	}
	require.Eventually(t, func() bool {
		s.get(t, d)
		_, ok := d.Annotations[v1alpha1.TriggerDeletionByMCMAnnotation]
		return !ok
	}, waitTimeout, poll, "handled names were not removed from the annotation")
}

// A plain name in trigger-deletion is marked with the deployment's
// last-deployment-replica-change-by-scaler-time, not the time the controller
// saw it. Replicas stay, so the marked machine stays to be looked at.
func (s *suite) testTriggerDeletionScalerTime(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "ca-time", 2)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	victim := s.machines(t, ns)[0].Name
	const decided = "2026-01-01T09:00:00Z"
	s.update(t, d, func(d *v1alpha1.MachineDeployment) {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[v1alpha1.TriggerDeletionByMCMAnnotation] = victim
		d.Annotations[v1alpha1.LastReplicaChangeByScalerTimeAnnotation] = decided
	})
	m := &v1alpha1.Machine{}
	require.Eventually(t, func() bool {
		require.NoError(t, s.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: victim}, m))
		return m.Annotations[v1alpha1.MarkedForDeletionTimeAnnotation] != ""
	}, waitTimeout, poll, "machine %s was not marked for deletion", victim)
	assert.Equal(t, decided, m.Annotations[v1alpha1.MarkedForDeletionTimeAnnotation])
	assert.Equal(t, v1alpha1.TriggeredForDeletionPriority, m.Annotations[v1alpha1.MachinePriorityAnnotation])
}

func (s *suite) testProportionalScaling(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	j := s.joiner(t, ns, 0)
	d := newDeployment(ns, "prop", 10)
	setRollingBounds(d, 3, 2)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)

	// Roll with joins held back: the new set surges to 3+2=5 (it may replace
	// the 2 unavailable-allowed old machines), the old set goes to 8.
	j.Pause()
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "class-v2" })
	sizes := func() map[string]int32 {
		out := map[string]int32{}
		for _, ms := range s.sets(t, ns) {
			out[ms.Annotations[v1alpha1.RevisionAnnotation]] = ms.Spec.Replicas
		}
		return out
	}
	require.Eventually(t, func() bool {
		sz := sizes()
		return sz["1"] == 8 && sz["2"] == 5
	}, waitTimeout, poll, "rollout did not reach old=8 new=5: %v", sizes())
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Paused = true })
	require.Eventually(t, func() bool {
		s.get(t, d)
		return d.Status.ObservedGeneration == d.Generation
	}, waitTimeout, poll)

	// 10 -> 15 while paused: max 13 -> 18, shared 8:5 as 11:7.
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Replicas = 15 })
	require.Eventually(t, func() bool {
		sz := sizes()
		return sz["1"] == 11 && sz["2"] == 7
	}, waitTimeout, poll, "not scaled proportionally: %v", sizes())

	j.Resume()
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Paused = false })
	s.waitComplete(t, d)
}

func (s *suite) testRollback(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "undo", 2)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "class-v2" })
	s.waitComplete(t, d)
	require.Equal(t, "2", d.Annotations[v1alpha1.RevisionAnnotation])

	// Roll back to the previous revision, as "kubectl rollout undo" did
	// before rollbackTo was deprecated.
	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.RollbackTo = &v1alpha1.RollbackConfig{} })
	require.Eventually(t, func() bool {
		s.get(t, d)
		return d.Spec.RollbackTo == nil && d.Spec.Template.Spec.Class.Name == "class-v1"
	}, waitTimeout, poll, "rollback not applied")
	s.waitComplete(t, d)
	for _, m := range s.machines(t, ns) {
		assert.Equal(t, "class-v1", m.Spec.Class.Name)
	}
	// The first template's set serves again, under the next revision, and
	// remembers its first one.
	require.Len(t, s.sets(t, ns), 2)
	for _, ms := range s.sets(t, ns) {
		if ms.Spec.Template.Spec.Class.Name == "class-v1" {
			assert.Equal(t, "3", ms.Annotations[v1alpha1.RevisionAnnotation])
			assert.Equal(t, "1", ms.Annotations[machinedeployment.AnnotationRevisionHistory])
			assert.Equal(t, int32(2), ms.Spec.Replicas)
		}
	}
	assert.Equal(t, "3", d.Annotations[v1alpha1.RevisionAnnotation])
}

func (s *suite) testDelete(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "doomed", 3)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	require.NoError(t, s.c.Delete(ctx, d))
	require.Eventually(t, func() bool {
		err := s.c.Get(ctx, client.ObjectKeyFromObject(d), &v1alpha1.MachineDeployment{})
		return apierrors.IsNotFound(err) && len(s.sets(t, ns)) == 0 && len(s.machines(t, ns)) == 0
	}, waitTimeout, poll, "deployment, sets and machines were not deleted")
}
