package machinedeployment_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/scaledown"
)

// testRollingUpdateHonoursDoNotDisrupt: a rolling update replaces every
// machine but the one whose node runs a pod that asks not to be disrupted
// (the first its set would delete), says why, and replaces that one once
// the pod is gone.
func (s *suite) testRollingUpdateHonoursDoNotDisrupt(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "dnd-roll", 3)
	setRollingBounds(d, 1, 0)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)

	held, pod := s.holdFirstVictim(t, ns, 3, "machina.io/do-not-disrupt")

	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "class-v2" })
	went := false
	require.Eventually(t, func() bool {
		current := &v1alpha1.Machine{}
		if err := s.c.Get(ctx, client.ObjectKeyFromObject(held), current); err != nil || current.DeletionTimestamp != nil {
			went = true
			return true
		}
		updated := 0
		for _, m := range s.machines(t, ns) {
			if m.Spec.Class.Name == "class-v2" && m.DeletionTimestamp == nil {
				updated++
			}
		}
		return updated == 3
	}, waitTimeout, poll, "the other machines were not replaced")
	require.False(t, went, "machine %s went while a pod on its node asks not to be disrupted", held.Name)
	s.expectEvent(t, ns, "DisruptionHeld")
	current := &v1alpha1.Machine{}
	require.NoError(t, s.c.Get(ctx, client.ObjectKeyFromObject(held), current), "the held machine stays")
	require.Nil(t, current.DeletionTimestamp, "the held machine stays")

	// The pod finished: the set looks again (disruption.Recheck, pods are
	// not watched) and the rollout completes.
	require.NoError(t, s.c.Delete(ctx, pod, client.GracePeriodSeconds(0)))
	require.Eventually(t, func() bool {
		err := s.c.Get(ctx, client.ObjectKeyFromObject(held), &v1alpha1.Machine{})
		return apierrors.IsNotFound(err)
	}, waitTimeout, poll, "machine %s was not replaced once its pod was gone", held.Name)
	s.waitComplete(t, d)
}

// testLargeScaleDownHonoursDoNotDisrupt: a scale-down by more than a few
// machines looks the holds up with one list of pods (disruption.HoldAll)
// and passes over the held machine all the same.
func (s *suite) testLargeScaleDownHonoursDoNotDisrupt(t *testing.T) {
	ctx := context.Background()
	ns := s.namespace(t)
	s.joiner(t, ns, 0)
	d := newDeployment(ns, "dnd-scale", 20)
	require.NoError(t, s.c.Create(ctx, d))
	s.waitComplete(t, d)
	held, _ := s.holdFirstVictim(t, ns, 20, "karpenter.sh/do-not-disrupt")

	s.update(t, d, func(d *v1alpha1.MachineDeployment) { d.Spec.Replicas = 2 })
	s.waitComplete(t, d)
	left := s.machines(t, ns)
	require.Len(t, left, 2)
	names := []string{left[0].Name, left[1].Name}
	require.Contains(t, names, held.Name, "the held machine was deleted by a scale-down of 18")
}

// holdFirstVictim puts a pod annotated key=true on the Node of the machine
// of ns (which has want machines) that its set would delete first; the
// joiner names each Node after its machine.
func (s *suite) holdFirstVictim(t *testing.T, ns string, want int, key string) (*v1alpha1.Machine, *corev1.Pod) {
	t.Helper()
	all := s.machines(t, ns)
	require.Len(t, all, want)
	ptrs := make([]*v1alpha1.Machine, len(all))
	for i := range all {
		ptrs[i] = &all[i]
	}
	scaledown.Sort(ptrs, time.Now())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: ns, Annotations: map[string]string{key: "true"}},
		Spec:       corev1.PodSpec{NodeName: ptrs[0].Name, Containers: []corev1.Container{{Name: "c", Image: "batch"}}},
	}
	require.NoError(t, s.c.Create(context.Background(), pod))
	return ptrs[0], pod
}
