package setup_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// TestFinalizers adds and removes finalizers through setup against a real
// API server, and holds the premise RemoveFinalizer's unlocked patch rests
// on: an object being deleted takes no new finalizers.
func TestFinalizers(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	ns := controllertest.Namespace(t, c, "finalizers")
	const ours, theirs = "test.machina.io/ours", "test.machina.io/theirs"

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"}}
	require.NoError(t, c.Create(t.Context(), cm))
	stale := cm.DeepCopy()

	require.NoError(t, setup.AddFinalizer(t.Context(), c, cm, ours))
	require.NoError(t, setup.AddFinalizer(t.Context(), c, cm, ours), "a second add is a no-op")
	assert.True(t, controllertest.HasFinalizer(t, c, cm, ours))

	// A copy read before the first add must not overwrite its finalizer.
	err := setup.AddFinalizer(t.Context(), c, stale, theirs)
	assert.True(t, apierrors.IsConflict(err), "an add from a stale copy conflicts: %v", err)

	require.NoError(t, c.Delete(t.Context(), cm))
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(cm), cm))
	withTheirs := cm.DeepCopy()
	controllerutil.AddFinalizer(withTheirs, theirs)
	require.Error(t, c.Update(t.Context(), withTheirs), "the API server refuses new finalizers on an object being deleted")

	held := cm.DeepCopy()
	require.NoError(t, setup.RemoveFinalizer(t.Context(), c, cm, ours))
	controllertest.RequireGone(t, c, cm)
	require.NoError(t, setup.RemoveFinalizer(t.Context(), c, held, ours), "an object gone counts as released")
}
