package machine

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// TestPatchOfAGoneMachine is the end of a deletion seen by a reconcile that
// read the Machine just before an earlier reconcile removed its finalizer:
// the Machine is gone when this reconcile writes its status. The write is
// done (nothing is left to record), not an error to retry; the same write to
// a Machine that is not being deleted still fails.
func TestPatchOfAGoneMachine(t *testing.T) {
	env := testenv.Start(t)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gone-"}}
	require.NoError(t, env.Client.Create(ctx, ns))
	r := &Reconciler{Control: env.Client}

	// read creates a Machine with the finalizer, deletes it if deleting,
	// and returns it as a reconcile reads it, then lets it go.
	read := func(t *testing.T, name string, deleting bool) *v1alpha1.Machine {
		m := &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns.Name, Finalizers: []string{v1alpha1.MachineFinalizer}},
			Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "small"}},
		}
		require.NoError(t, env.Client.Create(ctx, m))
		if deleting {
			require.NoError(t, env.Client.Delete(ctx, m))
		}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(m), m))
		gone := m.DeepCopy()
		controllerutil.RemoveFinalizer(gone, v1alpha1.MachineFinalizer)
		require.NoError(t, env.Client.Update(ctx, gone))
		if !deleting {
			require.NoError(t, env.Client.Delete(ctx, gone))
		}
		require.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(m), &v1alpha1.Machine{})))
		return m
	}
	scopeOf := func(m *v1alpha1.Machine) *scope {
		s := &scope{original: m, machine: m.DeepCopy()}
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "", "Deleting the node")
		return s
	}

	t.Run("status of a machine being deleted", func(t *testing.T) {
		m := read(t, "status", true)
		r.recordWrite(m)
		require.NoError(t, r.patch(ctx, scopeOf(m)))
		_, recorded := r.written.Get(m.UID, time.Now())
		assert.False(t, recorded, "the gone machine's written version is forgotten")
	})
	t.Run("metadata of a machine being deleted", func(t *testing.T) {
		s := scopeOf(read(t, "metadata", true))
		s.machine.Labels = map[string]string{"a": "b"}
		require.NoError(t, r.patch(ctx, s))
	})
	t.Run("a machine not being deleted", func(t *testing.T) {
		err := r.patch(ctx, scopeOf(read(t, "live", false)))
		require.Error(t, err)
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
	})
}
