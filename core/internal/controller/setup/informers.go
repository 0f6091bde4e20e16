package setup

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// InformAtStart has the manager's cache start the informers of objs when
// it starts, as it does for the kinds that controllers watch. A cached read
// of a kind that no watch covers starts its informer at that first read and
// waits until it has listed and synced, holding every reconcile that reads
// the kind meanwhile: in the in-place benchmark the first wave's drains
// all waited over a second for the MachineDrainRules. A kind whose
// definition is not installed is left out; its reads report that
// themselves.
func InformAtStart(mgr manager.Manager, objs ...client.Object) error {
	for _, o := range objs {
		_, err := mgr.GetCache().GetInformer(context.Background(), o, cache.BlockUntilSynced(false))
		if err != nil && !meta.IsNoMatchError(err) {
			return fmt.Errorf("starting the informer of %T with the cache: %w", o, err)
		}
	}
	return nil
}
