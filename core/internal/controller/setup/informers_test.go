package setup_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// failOnMissingInformer makes a cached read of a kind whose informer the
// cache did not start with fail, instead of starting it then.
func failOnMissingInformer(o *ctrl.Options) { o.Cache.ReaderFailOnMissingInformer = true }

// TestInformAtStart: the informer of a kind named to InformAtStart runs
// from the cache's start (a read finds it), while a kind that nothing
// named has none; a kind whose definition is not installed is left out
// without an error.
func TestInformAtStart(t *testing.T) {
	env := testenv.Start(t)
	mgr := controllertest.StartManager(t, env, func(mgr ctrl.Manager) error {
		return setup.InformAtStart(mgr, &machinaio.MachineDrainRule{})
	}, failOnMissingInformer)
	ctx := t.Context()
	require.NoError(t, mgr.GetClient().List(ctx, &machinaio.MachineDrainRuleList{}), "read from the informer started with the cache")
	var notCached *cache.ErrResourceNotCached
	require.True(t, errors.As(mgr.GetClient().List(ctx, &corev1.ConfigMapList{}), &notCached), "a kind nothing named has no informer")

	bare := testenv.Start(t, testenv.WithoutCRDs())
	controllertest.StartManager(t, bare, func(mgr ctrl.Manager) error {
		return setup.InformAtStart(mgr, &machinaio.MachineDrainRule{})
	})
}
