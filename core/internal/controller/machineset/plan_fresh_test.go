package machineset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// TestPlanReadsTheSetAgain: the race a clean-clone make test hit in an
// in-place rollout. The deployment moved a machine into a set, wrote the
// set's replicas up to include it and took the machine's transfer marker
// off; the set's reconcile still held the set from before the scale-up.
// Its fresh machine list, without the marker, beside the stale replicas
// made the moved machine surplus. The plan is made with the set as the API
// server has it after the list: nothing to delete.
func TestPlanReadsTheSetAgain(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "plan-" + rand.String(6)}}
	require.NoError(t, env.Client.Create(ctx, ns))

	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "web-v2"},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: 1,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "web-v2"}},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": "web-v2"}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "c"}},
			},
		},
	}
	require.NoError(t, env.Client.Create(ctx, ms))
	moved := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{
		Namespace: ns.Name, Name: "web-v1-moved", Labels: map[string]string{"pool": "web-v2"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ms, v1alpha1.GroupVersion.WithKind("MachineSet"))},
	}, Spec: v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "c"}}}
	require.NoError(t, env.Client.Create(ctx, moved))

	r := &Reconciler{Clients: setup.Clients{Client: env.Client, APIReader: env.Client}}
	stale := ms.DeepCopy()
	stale.Spec.Replicas = 0 // the set as its reconcile read it, before the scale-up
	selector, err := metav1.LabelSelectorAsSelector(ms.Spec.Selector)
	require.NoError(t, err)

	owned, p, err := r.planReplicas(ctx, stale, selector, []*v1alpha1.Machine{moved})
	require.NoError(t, err)
	require.Len(t, owned, 1)
	assert.True(t, p.empty(), "the moved machine was planned away: %+v", p)

	// A set whose replicas are really 0 still loses the machine.
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ms), ms))
	ms.Spec.Replicas = 0
	require.NoError(t, env.Client.Update(ctx, ms))
	_, p, err = r.planReplicas(ctx, ms, selector, []*v1alpha1.Machine{moved})
	require.NoError(t, err)
	require.Len(t, p.scaleDown, 1)
	assert.Equal(t, moved.Name, p.scaleDown[0].Name)

	// A set deleted meanwhile plans nothing.
	require.NoError(t, env.Client.Delete(ctx, ms))
	_, p, err = r.planReplicas(ctx, stale, labels.Everything(), []*v1alpha1.Machine{moved})
	require.NoError(t, err)
	assert.True(t, p.empty(), "%+v", p)
}
