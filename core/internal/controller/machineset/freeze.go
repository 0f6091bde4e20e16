package machineset

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/freeze"
)

// frozenRecheck is how soon a set synced while the gate is frozen is looked
// at again. The gate source below re-enqueues every set the moment the gate
// opens; the requeue is only a safety net for an unfreeze that happened
// before that source was watching.
const frozenRecheck = 30 * time.Second

// unfreezeSource returns a source that, each time gate opens, enqueues every
// MachineSet in the cache, so that the creations and deletions parked while
// it was frozen happen at once instead of at the next requeue. A nil gate
// never changes: the source does nothing.
func unfreezeSource(gate *freeze.Gate, c client.Reader) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		if gate == nil {
			return nil
		}
		go func() {
			for {
				// Take the channel before looking at the state, so that no
				// change between the two goes unnoticed.
				changed := gate.Changed()
				select {
				case <-ctx.Done():
					return
				case <-changed:
				}
				if gate.Frozen() {
					continue
				}
				sets := &v1alpha1.MachineSetList{}
				if err := c.List(ctx, sets, client.UnsafeDisableDeepCopy); err != nil {
					ctrl.LoggerFrom(ctx).Error(err, "Listing machine sets after the freeze ended")
					continue
				}
				for i := range sets.Items {
					q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&sets.Items[i])})
				}
			}
		}()
		return nil
	})
}
