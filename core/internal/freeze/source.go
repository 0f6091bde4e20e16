package freeze

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// Recheck is how soon an object synced while the gate is frozen is looked at
// again. UnfreezeSource re-enqueues everything the moment the gate opens; the
// requeue is only a safety net for an unfreeze that happened before that
// source was watching.
const Recheck = 30 * time.Second

// UnfreezeSource returns a controller source that, each time gate opens,
// enqueues every object of newList's kind in the cache c, so that the work a
// controller parked while the gate was frozen happens at once instead of at
// its next requeue. A nil gate never changes: the source does nothing.
func UnfreezeSource(gate *Gate, c client.Reader, newList func() client.ObjectList) source.Source {
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
				list := newList()
				if err := c.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
					ctrl.LoggerFrom(ctx).Error(err, "Listing objects after the freeze ended")
					continue
				}
				_ = meta.EachListItem(list, func(o runtime.Object) error {
					if obj, ok := o.(client.Object); ok {
						q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
					}
					return nil
				})
			}
		}()
		return nil
	})
}
