package machineset_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/machineset"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/freeze"
	"github.com/machina-io/machina/core/testenv"
)

// suite is one API server with the MachineSet controller running; every
// subtest works in a namespace of its own.
type suite struct {
	env  *testenv.Env
	c    client.Client
	gate *freeze.Gate
}

func TestMachineSetController(t *testing.T) {
	env := testenv.Start(t)
	gate := &freeze.Gate{}
	controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		return (&machineset.Reconciler{Gate: gate}).SetupWithManager(mgr, setup.Env{Workers: 4})
	})
	s := &suite{env: env, c: env.Client, gate: gate}

	t.Run("scales 0 to 5 to 2 to 0", s.testScale)
	t.Run("replaces a Failed machine", s.testReplaceFailed)
	t.Run("deletes the machine with the lowest priority first", s.testVictimPriority)
	t.Run("adopts orphans and releases machines that stop matching", s.testAdoptRelease)
	t.Run("applies node template and configuration to existing machines", s.testTemplatePropagation)
	t.Run("reports ready and available counts", s.testStatusCounts)
	t.Run("a frozen set creates no machines", s.testFrozen)
	t.Run("the API server freeze stops scale-up and Failed replacement until it ends", s.testAPIServerFreeze)
	t.Run("reports ReplicaFailure while machines cannot be created", s.testReplicaFailure)
	t.Run("scales through the scale subresource", s.testScaleSubresource)
	t.Run("deleting the set deletes its machines", s.testDelete)
	t.Run("MCM parity: effective-creation-timeout, stale machines counted", s.testMCMParity)
	t.Run("a set of no deployment says it ignores expireAfter", s.testExpireAfterIgnored)
}

func (s *suite) namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ms-" + rand.String(6)}}
	require.NoError(t, s.c.Create(context.Background(), ns))
	return ns.Name
}

func newSet(ns, name string, replicas int32) *v1alpha1.MachineSet {
	return &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": name}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "test-class"}},
			},
		},
	}
}

func (s *suite) get(t *testing.T, obj client.Object) {
	t.Helper()
	require.NoError(t, s.c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
}

// scale sets spec.replicas with a merge patch.
func (s *suite) scale(t *testing.T, ms *v1alpha1.MachineSet, replicas int32) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas))
	require.NoError(t, s.c.Patch(context.Background(), ms, client.RawPatch("application/merge-patch+json", patch)))
}

// machines lists the machines of a namespace straight from the API server.
func (s *suite) machines(t *testing.T, ns string) []v1alpha1.Machine {
	t.Helper()
	list := &v1alpha1.MachineList{}
	require.NoError(t, s.c.List(context.Background(), list, client.InNamespace(ns)))
	return list.Items
}

// waitSynced waits until the controller has written a status for the set's
// current generation with the given number of replicas.
func (s *suite) waitSynced(t *testing.T, ms *v1alpha1.MachineSet, replicas int32) {
	t.Helper()
	controllertest.Eventually(t, func() bool {
		cur := &v1alpha1.MachineSet{}
		if err := s.c.Get(context.Background(), client.ObjectKeyFromObject(ms), cur); err != nil {
			return false
		}
		return cur.Status.ObservedGeneration == cur.Generation && cur.Status.Replicas == replicas &&
			len(s.machines(t, ms.Namespace)) == int(replicas)
	}, "set %s did not settle at %d replicas", ms.Name, replicas)
}

func total(st controllertest.MachineState) int { return len(st) }

func (s *suite) testScale(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	ms := newSet(ns, "workers", 0)
	require.NoError(t, s.c.Create(ctx, ms))
	s.waitSynced(t, ms, 0)

	steps := []int32{5, 2, 0}
	prev := int32(0)
	for _, want := range steps {
		mark := obs.Mark()
		s.scale(t, ms, want)
		s.waitSynced(t, ms, want)
		states := obs.StatesSince(mark)
		lo, hi := min(prev, want), max(prev, want)
		before := obs.StatesSince(0)
		seen := map[string]bool{}
		if mark > 0 {
			for n := range before[mark-1] {
				seen[n] = true
			}
		}
		for i, st := range states {
			assert.GreaterOrEqual(t, total(st), int(lo), "scale %d->%d: state %d has too few machines", prev, want, i)
			assert.LessOrEqual(t, total(st), int(hi), "scale %d->%d: state %d has too many machines", prev, want, i)
			if want < prev {
				for n := range st {
					assert.True(t, seen[n], "scale %d->%d: machine %s created during scale-down", prev, want, n)
				}
			}
		}
		for _, m := range s.machines(t, ns) {
			assert.True(t, strings.HasPrefix(m.Name, "workers-"), m.Name)
			assert.Len(t, m.Name, len("workers-")+5)
			assert.Equal(t, "workers", m.Labels["pool"])
			ref := metav1.GetControllerOf(&m)
			require.NotNil(t, ref)
			assert.Equal(t, ms.UID, ref.UID)
			assert.Equal(t, "test-class", m.Spec.Class.Name)
		}
		prev = want
	}
	s.get(t, ms)
	assert.Contains(t, ms.Finalizers, v1alpha1.MachineFinalizer)
	assert.Equal(t, "pool=workers", ms.Status.LabelSelector)
}

func (s *suite) testReplaceFailed(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	ms := newSet(ns, "replace", 2)
	require.NoError(t, s.c.Create(ctx, ms))
	s.waitSynced(t, ms, 2)

	victim := s.machines(t, ns)[0]
	mark := obs.Mark()
	require.NoError(t, controllertest.SetMachinePhase(ctx, s.c, &victim, v1alpha1.MachineFailed))
	controllertest.Eventually(t, func() bool {
		ms := s.machines(t, ns)
		if len(ms) != 2 {
			return false
		}
		for _, m := range ms {
			if m.Name == victim.Name {
				return false
			}
		}
		return true
	}, "failed machine was not replaced")
	for i, st := range obs.StatesSince(mark) {
		assert.LessOrEqual(t, total(st), 2, "state %d has more machines than replicas", i)
	}
}

func (s *suite) testVictimPriority(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	ms := newSet(ns, "prio", 3)
	require.NoError(t, s.c.Create(ctx, ms))
	s.waitSynced(t, ms, 3)

	machines := s.machines(t, ns)
	// The victim is Running while the others are still being created, so by
	// phase it would go last: only its priority can make it go first.
	require.NoError(t, controllertest.SetMachinePhase(ctx, s.c, &machines[0], v1alpha1.MachineRunning))
	victim := machines[0]
	orig := victim.DeepCopy()
	victim.Annotations = map[string]string{v1alpha1.MachinePriorityAnnotation: "1"}
	require.NoError(t, s.c.Patch(ctx, &victim, client.MergeFrom(orig)))

	s.scale(t, ms, 2)
	s.waitSynced(t, ms, 2)
	left := s.machines(t, ns)
	require.Len(t, left, 2)
	for _, m := range left {
		assert.NotEqual(t, victim.Name, m.Name, "the priority-1 machine must be the one deleted")
	}
}

func (s *suite) testAdoptRelease(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	obs := controllertest.ObserveMachines(t, s.env.Config, s.env.Scheme, ns)
	orphan := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", Labels: map[string]string{"pool": "adopt"}},
		Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Name: "test-class"}},
	}
	require.NoError(t, s.c.Create(ctx, orphan))

	ms := newSet(ns, "adopt", 1)
	require.NoError(t, s.c.Create(ctx, ms))
	controllertest.Eventually(t, func() bool {
		s.get(t, orphan)
		ref := metav1.GetControllerOf(orphan)
		return ref != nil && ref.UID == ms.UID
	}, "orphan was not adopted")
	s.waitSynced(t, ms, 1)
	for i, st := range obs.States() {
		assert.LessOrEqual(t, total(st), 1, "state %d: the set created a machine although it could adopt one", i)
	}

	// Relabel the machine: the set releases it and creates a replacement.
	s.get(t, orphan)
	orig := orphan.DeepCopy()
	orphan.Labels = map[string]string{"pool": "elsewhere"}
	require.NoError(t, s.c.Patch(ctx, orphan, client.MergeFrom(orig)))
	controllertest.Eventually(t, func() bool {
		s.get(t, orphan)
		return metav1.GetControllerOf(orphan) == nil
	}, "machine was not released")
	controllertest.Eventually(t, func() bool {
		owned := 0
		for _, m := range s.machines(t, ns) {
			if ref := metav1.GetControllerOf(&m); ref != nil && ref.UID == ms.UID {
				owned++
			}
		}
		s.get(t, ms)
		return owned == 1 && len(s.machines(t, ns)) == 2 && ms.Status.Replicas == 1
	}, "the set did not replace the released machine")
}

func (s *suite) testTemplatePropagation(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	ms := newSet(ns, "tmpl", 2)
	require.NoError(t, s.c.Create(ctx, ms))
	s.waitSynced(t, ms, 2)
	before := s.machines(t, ns)

	s.get(t, ms)
	orig := ms.DeepCopy()
	drain := v1alpha1.Duration{Duration: 42 * time.Minute}
	ms.Spec.Template.Spec.NodeTemplateSpec.Labels = map[string]string{"role": "worker"}
	ms.Spec.Template.Spec.NodeTemplateSpec.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	ms.Spec.Template.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineDrainTimeout: &drain}
	require.NoError(t, s.c.Patch(ctx, ms, client.MergeFrom(orig)))

	controllertest.Eventually(t, func() bool {
		for _, m := range s.machines(t, ns) {
			if m.Spec.NodeTemplateSpec.Labels["role"] != "worker" || len(m.Spec.NodeTemplateSpec.Spec.Taints) != 1 ||
				m.Spec.MachineConfiguration == nil || m.Spec.MachineDrainTimeout == nil || m.Spec.MachineDrainTimeout.Duration != 42*time.Minute {
				return false
			}
		}
		return true
	}, "template was not applied to the machines")
	after := s.machines(t, ns)
	assert.ElementsMatch(t, names(before), names(after), "propagation must not replace machines")

	// A machine whose node template drifts from the set's, after the set
	// found it in sync (templateMemo), is brought back.
	drifted := after[0].DeepCopy()
	drifted.Spec.NodeTemplateSpec.Labels["role"] = "drifted"
	require.NoError(t, s.c.Patch(ctx, drifted, client.MergeFrom(&after[0])))
	controllertest.Eventually(t, func() bool {
		m := &v1alpha1.Machine{}
		require.NoError(t, s.c.Get(ctx, client.ObjectKeyFromObject(drifted), m))
		return m.Generation > drifted.Generation && m.Spec.NodeTemplateSpec.Labels["role"] == "worker"
	}, "the drifted machine did not get the set's node template back")
}

func names(ms []v1alpha1.Machine) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func (s *suite) testStatusCounts(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	ms := newSet(ns, "status", 3)
	ms.Spec.MinReadySeconds = 2
	require.NoError(t, s.c.Create(ctx, ms))
	s.waitSynced(t, ms, 3)

	machines := s.machines(t, ns)
	require.NoError(t, controllertest.SetMachinePhase(ctx, s.c, &machines[0], v1alpha1.MachineRunning))
	require.NoError(t, controllertest.SetMachinePhase(ctx, s.c, &machines[1], v1alpha1.MachineRunning))
	require.NoError(t, controllertest.SetMachinePhase(ctx, s.c, &machines[2], v1alpha1.MachinePending))
	// The stored lastUpdateTime (whole seconds) is what minReadySeconds
	// counts from.
	readySince := func() time.Time {
		var latest time.Time
		for _, m := range s.machines(t, ns) {
			if m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning && m.Status.CurrentStatus.LastUpdateTime.After(latest) {
				latest = m.Status.CurrentStatus.LastUpdateTime.Time
			}
		}
		return latest
	}

	controllertest.Eventually(t, func() bool {
		s.get(t, ms)
		return ms.Status.ReadyReplicas == 2
	}, "the set never counted 2 ready machines")
	if time.Since(readySince()) < 1500*time.Millisecond {
		assert.Zero(t, ms.Status.AvailableReplicas, "machines are not available before minReadySeconds")
	}
	controllertest.Eventually(t, func() bool {
		s.get(t, ms)
		return ms.Status.AvailableReplicas == 2
	}, "machines did not become available after minReadySeconds")
	assert.GreaterOrEqual(t, time.Since(readySince()), 2*time.Second, "available before minReadySeconds")
	assert.Equal(t, int32(3), ms.Status.Replicas)
	assert.Equal(t, int32(3), ms.Status.FullyLabeledReplicas)
	assert.Equal(t, ms.Generation, ms.Status.ObservedGeneration)
	assert.Empty(t, ms.Status.Conditions)
}

func (s *suite) testFrozen(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	ms := newSet(ns, "frozen", 2)
	ms.Labels = map[string]string{v1alpha1.FreezeLabel: "True"}
	require.NoError(t, s.c.Create(ctx, ms))
	// The status write comes after the sync's creates; once the status shows
	// the generation, the controller has decided.
	controllertest.Eventually(t, func() bool {
		s.get(t, ms)
		return ms.Status.ObservedGeneration == ms.Generation
	}, "the frozen set never observed its generation")
	assert.Empty(t, s.machines(t, ns), "a frozen set must not create machines")

	orig := ms.DeepCopy()
	delete(ms.Labels, v1alpha1.FreezeLabel)
	require.NoError(t, s.c.Patch(ctx, ms, client.MergeFrom(orig)))
	s.waitSynced(t, ms, 2)
}

// testReplicaFailure makes the API server reject machine creation with a
// ValidatingAdmissionPolicy, a real in-server admission check.
func (s *suite) testReplicaFailure(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	policyName := "reject-machines-" + ns
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{"machine.sapcloud.io"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"machines"},
						},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.metadata.labels) || !('reject' in object.metadata.labels)",
				Message:    "machines labelled reject are refused",
			}},
		},
	}
	require.NoError(t, s.c.Create(ctx, policy))
	t.Cleanup(func() { _ = s.c.Delete(context.Background(), policy) })
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policyName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policyName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			},
		},
	}
	require.NoError(t, s.c.Create(ctx, binding))
	t.Cleanup(func() { _ = s.c.Delete(context.Background(), binding) })
	// The policy takes effect once the API server has loaded it.
	controllertest.Eventually(t, func() bool {
		probe := &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-", Labels: map[string]string{"reject": "yes"}},
			Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Name: "test-class"}},
		}
		err := s.c.Create(ctx, probe, client.DryRunAll)
		return apierrors.IsInvalid(err) || apierrors.IsForbidden(err)
	}, "admission policy not active")

	ms := newSet(ns, "rejected", 3)
	ms.Spec.Template.Labels["reject"] = "yes"
	require.NoError(t, s.c.Create(ctx, ms))
	controllertest.Eventually(t, func() bool {
		s.get(t, ms)
		for _, c := range ms.Status.Conditions {
			if c.Type == v1alpha1.MachineSetReplicaFailure && c.Status == v1alpha1.ConditionTrue && c.Reason == "FailedCreate" {
				return strings.Contains(c.Message, "refused")
			}
		}
		return false
	}, "ReplicaFailure condition not reported")
	assert.Empty(t, s.machines(t, ns))

	s.get(t, ms)
	orig := ms.DeepCopy()
	delete(ms.Spec.Template.Labels, "reject")
	require.NoError(t, s.c.Patch(ctx, ms, client.MergeFrom(orig)))
	s.waitSynced(t, ms, 3)
	controllertest.Eventually(t, func() bool {
		s.get(t, ms)
		return len(ms.Status.Conditions) == 0
	}, "ReplicaFailure condition not cleared")
}

func (s *suite) testScaleSubresource(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	ms := newSet(ns, "scaled", 1)
	require.NoError(t, s.c.Create(ctx, ms))
	s.waitSynced(t, ms, 1)

	sc := &autoscalingv1.Scale{}
	require.NoError(t, s.c.SubResource("scale").Get(ctx, ms, sc))
	assert.Equal(t, int32(1), sc.Spec.Replicas)
	assert.Equal(t, "pool=scaled", sc.Status.Selector)
	sc.Spec.Replicas = 3
	require.NoError(t, s.c.SubResource("scale").Update(ctx, ms, client.WithSubResourceBody(sc)))
	s.waitSynced(t, ms, 3)
}

func (s *suite) testDelete(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	ms := newSet(ns, "doomed", 3)
	require.NoError(t, s.c.Create(ctx, ms))
	s.waitSynced(t, ms, 3)
	require.NoError(t, s.c.Delete(ctx, ms))
	controllertest.Eventually(t, func() bool {
		err := s.c.Get(ctx, client.ObjectKeyFromObject(ms), &v1alpha1.MachineSet{})
		return apierrors.IsNotFound(err) && len(s.machines(t, ns)) == 0
	}, "set and machines were not deleted")
}
