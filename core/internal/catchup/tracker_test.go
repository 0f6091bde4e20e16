package catchup_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/internal/catchup"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/testenv"
)

// TestWaitFollowsAnOutage takes the API server away from a cache and
// brings it back with changes the cache has not seen: Wait must return only
// once the cache shows them. The cache reaches the API server through a
// proxy, so that the test can make the changes while the cache is still
// cut off, and bring it back just before Wait.
func TestWaitFollowsAnOutage(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	c := env.Client
	const ns = "catchup"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "old"}}
	require.NoError(t, c.Create(ctx, old))

	tracker := &catchup.Tracker{}
	proxy := controllertest.StartProxy(t, env.Config)
	cch, err := cache.New(proxy.Config(env.Config), cache.Options{
		Scheme:            env.Scheme,
		DefaultNamespaces: map[string]cache.Config{ns: {}},
		NewInformer:       tracker.NewInformer("control"),
	})
	require.NoError(t, err)
	_, err = cch.GetInformer(ctx, &corev1.ConfigMap{})
	require.NoError(t, err)
	cacheCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = cch.Start(cacheCtx) }()
	require.True(t, cch.WaitForCacheSync(ctx))
	require.Equal(t, 1, tracker.Len(), "the informer is tracked")
	require.NoError(t, tracker.Wait(ctx, 30*time.Second), "a synced cache has caught up")

	proxy.SetDown(true)
	assert.Error(t, tracker.Wait(ctx, 2*time.Second), "without an API server there is no snapshot to catch up with")
	// Changes the cache cannot see.
	fresh := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fresh"}}
	require.NoError(t, c.Create(ctx, fresh))
	require.NoError(t, c.Delete(ctx, old))
	proxy.SetDown(false)

	// The cache's watch reconnects only after its backoff: Wait must
	// wait for it.
	require.NoError(t, tracker.Wait(ctx, time.Minute))
	got := &corev1.ConfigMap{}
	assert.NoError(t, cch.Get(ctx, client.ObjectKeyFromObject(fresh), got), "caught up, but the cache lacks an object created after the outage")
	err = cch.Get(ctx, client.ObjectKeyFromObject(old), got)
	assert.True(t, apierrors.IsNotFound(err), "caught up, but the cache still has an object deleted after the outage: %v", err)
}
