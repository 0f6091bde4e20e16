package setup_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// TestReadFresh reads objects against a real API server as a reconcile
// does: the cached copy while it shows the controller's own write, the
// API server's while it does not, nil once the object is gone; versions
// that cannot be compared are read live once.
func TestReadFresh(t *testing.T) {
	env := testenv.Start(t)
	ns := controllertest.Namespace(t, env.Client, "fresh")
	ctx := t.Context()
	live := env.Client // reads straight from the API server

	// create makes a ConfigMap and returns it as created (the copy a
	// cache that has not caught up holds) and after a write (what the
	// API server answered the controller).
	create := func(name string) (old, written *corev1.ConfigMap) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"step": "created"}}
		require.NoError(t, env.Client.Create(ctx, cm))
		old = cm.DeepCopy()
		cm.Data["step"] = "written"
		require.NoError(t, env.Client.Update(ctx, cm))
		return old, cm
	}

	t.Run("nothing recorded: the cached copy", func(t *testing.T) {
		var w setup.Written[struct{}]
		old, _ := create("none")
		got, err := setup.ReadFresh(ctx, &w, live, old)
		require.NoError(t, err)
		assert.Same(t, old, got)
	})

	t.Run("stale: live until the cache shows the write", func(t *testing.T) {
		var w setup.Written[struct{}]
		old, written := create("stale")
		w.Record(written.UID, written.ResourceVersion, struct{}{}, time.Now())
		for range 2 {
			got, err := setup.ReadFresh(ctx, &w, live, old)
			require.NoError(t, err)
			assert.Equal(t, "written", got.Data["step"], "read from the API server")
			assert.Equal(t, written.ResourceVersion, got.ResourceVersion)
			_, ok := w.Get(written.UID, time.Now())
			assert.True(t, ok, "the write stays recorded while the cache does not show it")
		}
		got, err := setup.ReadFresh(ctx, &w, live, written)
		require.NoError(t, err)
		assert.Same(t, written, got, "the cache shows the write")
		_, ok := w.Get(written.UID, time.Now())
		assert.False(t, ok, "and the write is forgotten")
	})

	t.Run("without a live reader: the cached copy, the write kept", func(t *testing.T) {
		var w setup.Written[struct{}]
		old, written := create("noreader")
		w.Record(written.UID, written.ResourceVersion, struct{}{}, time.Now())
		got, err := setup.ReadFresh(ctx, &w, nil, old)
		require.NoError(t, err)
		assert.Same(t, old, got)
		_, ok := w.Get(written.UID, time.Now())
		assert.True(t, ok)
	})

	t.Run("unordered: live once, then the cache", func(t *testing.T) {
		var w setup.Written[struct{}]
		old, written := create("unordered")
		w.Record(written.UID, "not-a-number", struct{}{}, time.Now())
		got, err := setup.ReadFresh(ctx, &w, live, old)
		require.NoError(t, err)
		assert.Equal(t, "written", got.Data["step"], "read from the API server")
		_, ok := w.Get(written.UID, time.Now())
		assert.False(t, ok, "the write is forgotten: the cache is trusted from the next reconcile on")
		got, err = setup.ReadFresh(ctx, &w, live, old)
		require.NoError(t, err)
		assert.Same(t, old, got)
	})

	t.Run("gone: nil, the write forgotten", func(t *testing.T) {
		var w setup.Written[struct{}]
		old, written := create("gone")
		w.Record(written.UID, written.ResourceVersion, struct{}{}, time.Now())
		require.NoError(t, env.Client.Delete(ctx, written))
		got, err := setup.ReadFresh(ctx, &w, live, old)
		require.NoError(t, err)
		assert.Nil(t, got)
		_, ok := w.Get(written.UID, time.Now())
		assert.False(t, ok)
	})

	t.Run("an error: returned, the write kept", func(t *testing.T) {
		var w setup.Written[struct{}]
		old, written := create("error")
		w.Record(written.UID, written.ResourceVersion, struct{}{}, time.Now())
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		_, err := setup.ReadFresh(canceled, &w, live, old)
		require.Error(t, err)
		_, ok := w.Get(written.UID, time.Now())
		assert.True(t, ok)
	})
}
