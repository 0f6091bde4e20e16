package setup

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReadFresh returns the object as a reconcile must see it: cached, the copy
// the reconcile read from its cache, unless w records a write to it that
// the cache does not show yet; then the object is read through live (the
// API server, a manager's GetAPIReader), and the write stays recorded until
// the cache shows it, so that every reconcile until then reads live, not
// only the first one after the write. It returns nil when the object is
// gone (and forgets the write: the cache will never show it), and cached
// when live is nil.
//
// Versions the API server does not let Written compare (Unordered) are read
// live once, and the write forgotten: the cache is trusted again from the
// next reconcile on rather than every reconcile reading live until the TTL.
// A write recorded meanwhile by another reconcile stays recorded in both
// cases (ForgetVersion).
//
// The write is timed by the wall clock: it measures how long the cache
// lags, which a test's clock does not.
func ReadFresh[T any, PT interface {
	*T
	client.Object
}, V any](ctx context.Context, w *Written[V], live client.Reader, cached PT) (PT, error) {
	wr, freshness := w.Check(cached, time.Now())
	if freshness == Fresh || live == nil {
		return cached, nil
	}
	obj := PT(new(T))
	if err := live.Get(ctx, client.ObjectKeyFromObject(cached), obj); err != nil {
		if apierrors.IsNotFound(err) {
			w.ForgetVersion(cached.GetUID(), wr.Version)
			return nil, nil
		}
		return nil, err
	}
	if freshness == Unordered {
		w.ForgetVersion(cached.GetUID(), wr.Version)
	}
	return obj, nil
}
