package machinedeployment

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// The in-place path's resize of a machine set, against a real API server:
// a status write of the set controller since the copy was read does not
// stop it (the resourceVersion lock of scaleMachineSet would), a change of
// the replicas does, as a conflict, and the replica annotations go with
// the replicas, also onto a set that had no annotations; its event says
// the set was sized to its machines.
func TestResizeMachineSetTestsOnlyReplicas(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	ns := controllertest.Namespace(t, env.Client, "resize")
	mgr := controllertest.NewManager(t, env.Config, env.Scheme)
	r := &Reconciler{Clients: setup.Clients{Client: env.Client, Recorder: setup.Recorder(mgr, ControllerName)}}
	d := &v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}, Spec: v1alpha1.MachineDeploymentSpec{Replicas: 4}}
	s := newScope(ctx, d)

	labels := map[string]string{"set": "a"}
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: 3, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
			},
		},
	}
	require.NoError(t, env.Client.Create(ctx, ms))
	stale := ms.DeepCopy()
	ms.Status.Replicas = 3
	require.NoError(t, env.Client.Status().Update(ctx, ms), "the set controller's status write")
	require.NotEqual(t, stale.ResourceVersion, ms.ResourceVersion)

	locked := stale.DeepCopy()
	err := r.scaleMachineSet(ctx, s, locked, 2)
	require.True(t, apierrors.IsConflict(err), "the resourceVersion lock fails on the status write: %v", err)

	require.NoError(t, r.resizeMachineSet(ctx, s, stale, 2))
	got := &v1alpha1.MachineSet{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ms), got))
	assert.Equal(t, int32(2), got.Spec.Replicas)
	assert.Equal(t, "4", got.Annotations[v1alpha1.DesiredReplicasAnnotation])
	assert.Equal(t, int32(3), got.Status.Replicas, "the status is left alone")
	assert.Equal(t, int32(2), stale.Spec.Replicas, "the copy is the written set")
	// Its event tells a sizing from a scaling of the rollout's.
	controllertest.RequireEvent(t, env.Client, d, "ScalingMachineSet", "Scaled down machine set a from 3 to 2 to match its machines")

	// Someone else scales the set meanwhile: the test fails, as a conflict.
	behind := got.DeepCopy()
	got.Spec.Replicas = 5
	require.NoError(t, env.Client.Update(ctx, got))
	err = r.resizeMachineSet(ctx, s, behind, 1)
	require.Error(t, err)
	assert.True(t, apierrors.IsConflict(err), "a changed replicas count is a conflict: %v", err)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ms), got))
	assert.Equal(t, int32(5), got.Spec.Replicas, "nothing written")

	// A key with a slash and a tilde in it is escaped in the pointer.
	before := got.DeepCopy()
	before.Annotations = map[string]string{"a/b~c": "1"}
	after := before.DeepCopy()
	after.Annotations["a/b~c"] = "2"
	after.Annotations[v1alpha1.MaxReplicasAnnotation] = "6"
	data, err := replicasTestPatch(before, after).Data(after)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"/metadata/annotations/a~1b~0c"`)
}
