package setup_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// writes counts the patches sent through a client to the real API server.
type writes struct{ object, status atomic.Int32 }

func (w *writes) client(t *testing.T, env *testenv.Env) client.Client {
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return interceptor.NewClient(c, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			w.object.Add(1)
			return c.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			w.status.Add(1)
			return c.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
}

func newSet(ns string) *v1alpha1.MachineSet {
	return &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "set", Labels: map[string]string{"keep": "yes", "drop": "yes"}},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: 1,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": "a"}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "c"}},
			},
		},
	}
}

// TestPatcher writes through a Patcher against a real API server: nothing
// when nothing changed, metadata and spec apart from status, each only when
// it changed, and a locked write from a stale copy refused as a conflict
// (a locked status too, when the object part is written first).
func TestPatcher(t *testing.T) {
	env := testenv.Start(t)
	ns := controllertest.Namespace(t, env.Client, "patcher")
	ctx := t.Context()
	var w writes
	c := w.client(t, env)

	ms := newSet(ns)
	require.NoError(t, env.Client.Create(ctx, ms))
	read := func() *v1alpha1.MachineSet {
		got := &v1alpha1.MachineSet{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ms), got))
		return got
	}

	t.Run("unchanged writes nothing", func(t *testing.T) {
		obj := read()
		p := setup.NewPatcher(c, obj, setup.LockObject(), setup.LockStatus())
		require.NoError(t, p.Patch(ctx, obj))
		assert.Zero(t, w.object.Load()+w.status.Load(), "no request for an unchanged object")
		assert.Equal(t, ms.ResourceVersion, read().ResourceVersion)
	})

	t.Run("status alone", func(t *testing.T) {
		obj := read()
		p := setup.NewPatcher(c, obj)
		obj.Status.Replicas = 3
		obj.Status.ObservedGeneration = obj.Generation
		require.NoError(t, p.Patch(ctx, obj))
		assert.Equal(t, int32(0), w.object.Load())
		assert.Equal(t, int32(1), w.status.Load())
		got := read()
		assert.Equal(t, int32(3), got.Status.Replicas)
		assert.Equal(t, got.ResourceVersion, obj.ResourceVersion, "obj holds the API server's answer")

		require.NoError(t, p.Patch(ctx, obj), "a second Patch compares with what was written")
		assert.Equal(t, int32(1), w.status.Load())
	})

	t.Run("metadata, spec and status", func(t *testing.T) {
		w.object.Store(0)
		w.status.Store(0)
		obj := read()
		p := setup.NewPatcher(c, obj, setup.LockObject(), setup.LockStatus())
		delete(obj.Labels, "drop")
		obj.Labels["new"] = "yes"
		obj.Spec.Replicas = 2
		obj.Status.Replicas = 2
		obj.Status.FullyLabeledReplicas = 1
		require.NoError(t, p.Patch(ctx, obj))
		assert.Equal(t, int32(1), w.object.Load())
		assert.Equal(t, int32(1), w.status.Load())
		got := read()
		assert.Equal(t, map[string]string{"keep": "yes", "new": "yes"}, got.Labels)
		assert.Equal(t, int32(2), got.Spec.Replicas)
		assert.Equal(t, int32(2), got.Status.Replicas, "the status keeps what the reconcile computed")
		assert.Equal(t, int32(1), got.Status.FullyLabeledReplicas)
	})

	t.Run("a count that drops to 0 is stored", func(t *testing.T) {
		obj := read()
		require.NotZero(t, obj.Status.Replicas)
		p := setup.NewPatcher(c, obj, setup.StatusCounts("replicas", "readyReplicas"))
		obj.Status.Replicas = 0
		require.NoError(t, p.Patch(ctx, obj))
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("MachineSet"))
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ms), u))
		for _, f := range []string{"replicas", "readyReplicas"} {
			v, found, err := unstructured.NestedInt64(u.Object, "status", f)
			require.NoError(t, err)
			assert.True(t, found, "status.%s is stored", f)
			assert.Zero(t, v)
		}
	})

	t.Run("a locked write from a stale copy conflicts", func(t *testing.T) {
		stale := read()
		fresh := read()
		fresh.Labels["other"] = "writer"
		require.NoError(t, env.Client.Update(ctx, fresh))

		p := setup.NewPatcher(c, stale, setup.LockObject())
		stale.Labels["mine"] = "yes"
		err := p.Patch(ctx, stale)
		require.True(t, apierrors.IsConflict(err), "want a conflict, got %v", err)
		assert.Equal(t, "writer", read().Labels["other"], "the other writer's label is kept")

		res, err := setup.RequeueOnConflict(ctrl.Result{}, fmt.Errorf("patching: %w", err))
		require.NoError(t, err, "a conflict is no failure")
		assert.Equal(t, ctrl.Result{RequeueAfter: setup.ConflictRetry}, res)

		// Without the lock the merge patch names only the changed label.
		stale = read()
		p = setup.NewPatcher(c, stale)
		fresh = read()
		fresh.Labels["third"] = "writer"
		require.NoError(t, env.Client.Update(ctx, fresh))
		stale.Labels["mine"] = "yes"
		require.NoError(t, p.Patch(ctx, stale))
		got := read()
		assert.Equal(t, "yes", got.Labels["mine"])
		assert.Equal(t, "writer", got.Labels["third"])
	})

	// A status locked without the object: when the same Patch also writes
	// metadata, a status write by someone else between the read and that
	// metadata write must still conflict, not be taken as seen.
	t.Run("a locked status after an object write from a stale copy conflicts", func(t *testing.T) {
		stale := read()
		fresh := read()
		fresh.Status.Conditions = []v1alpha1.MachineSetCondition{{Type: "Theirs", Status: v1alpha1.ConditionTrue}}
		require.NoError(t, env.Client.Status().Update(ctx, fresh))

		p := setup.NewPatcher(c, stale, setup.LockStatus())
		stale.Labels["status-lock"] = "yes"
		stale.Status.Conditions = []v1alpha1.MachineSetCondition{{Type: "Mine", Status: v1alpha1.ConditionTrue}}
		err := p.Patch(ctx, stale)
		require.True(t, apierrors.IsConflict(err), "want a conflict, got %v", err)
		got := read()
		require.Len(t, got.Status.Conditions, 1)
		assert.EqualValues(t, "Theirs", got.Status.Conditions[0].Type, "the other writer's condition is kept")
	})
}

// TestPatcherStrategic adds a finalizer to a Node from a stale copy with a
// strategic merge patch: the finalizer another writer added meanwhile is
// kept, no conflict.
func TestPatcherStrategic(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	const ours, theirs = "test.machina.io/ours", "test.machina.io/theirs"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "strategic"}}
	require.NoError(t, env.Client.Create(ctx, node))
	t.Cleanup(func() {
		n := &corev1.Node{}
		if env.Client.Get(context.Background(), client.ObjectKeyFromObject(node), n) == nil {
			n.Finalizers = nil
			_ = env.Client.Update(context.Background(), n)
		}
	})
	stale := node.DeepCopy()
	fresh := node.DeepCopy()
	controllerutil.AddFinalizer(fresh, theirs)
	require.NoError(t, env.Client.Update(ctx, fresh))

	var w writes
	p := setup.NewPatcher(w.client(t, env), stale, setup.Strategic())
	require.NoError(t, p.Patch(ctx, stale))
	assert.Zero(t, w.object.Load()+w.status.Load(), "nothing changed, nothing written")

	controllerutil.AddFinalizer(stale, ours)
	require.NoError(t, p.Patch(ctx, stale))
	got := &corev1.Node{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(node), got))
	assert.ElementsMatch(t, []string{ours, theirs}, got.Finalizers)
	assert.Equal(t, int32(1), w.object.Load())
	assert.Zero(t, w.status.Load())
}

// TestRequeueOnConflict holds the policy: a conflict requeues soon without
// an error; anything else passes through.
func TestRequeueOnConflict(t *testing.T) {
	boom := errors.New("boom")
	res, err := setup.RequeueOnConflict(ctrl.Result{RequeueAfter: 5}, boom)
	assert.Equal(t, ctrl.Result{RequeueAfter: 5}, res)
	assert.Equal(t, boom, err)

	res, err = setup.RequeueOnConflict(ctrl.Result{RequeueAfter: 7}, nil)
	assert.Equal(t, ctrl.Result{RequeueAfter: 7}, res)
	assert.NoError(t, err)

	conflict := apierrors.NewConflict(v1alpha1.GroupVersion.WithResource("machines").GroupResource(), "m", errors.New("changed"))
	res, err = setup.RequeueOnConflict(ctrl.Result{}, errors.Join(fmt.Errorf("patching: %w", conflict), conflict))
	assert.Equal(t, ctrl.Result{RequeueAfter: setup.ConflictRetry}, res)
	assert.NoError(t, err)

	for _, failed := range []error{
		errors.Join(boom, fmt.Errorf("patching: %w", conflict)),
		fmt.Errorf("reconciling: %w", errors.Join(conflict, boom)),
	} {
		res, err = setup.RequeueOnConflict(ctrl.Result{}, failed)
		assert.Equal(t, ctrl.Result{}, res)
		assert.Equal(t, failed, err, "a failure joined with a conflict is not hidden")
	}
}
