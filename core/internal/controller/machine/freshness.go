package machine

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// writtenVersions remembers the resourceVersion of the controller's last
// write to each Machine, until the next reconcile of that Machine has seen
// it. The cache that reconciles read from lags behind the API server: a
// reconcile right after a write (the deletion flow requeues at once) could
// otherwise read the Machine as it was before the write, and run a step
// with side effects (a DeleteMachine, a drain pass) a second time.
type writtenVersions struct {
	mu sync.Mutex
	rv map[types.UID]string
}

func (w *writtenVersions) record(uid types.UID, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rv == nil {
		w.rv = map[types.UID]string{}
	}
	w.rv[uid] = rv
}

// take returns the recorded version and forgets it.
func (w *writtenVersions) take(uid types.UID) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rv, ok := w.rv[uid]
	delete(w.rv, uid)
	return rv, ok
}

func (w *writtenVersions) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, uid)
}

// fresh returns the Machine as the reconcile must see it: the cached one,
// unless the controller wrote the Machine since and the cache does not
// show that write yet; then it is read from the API server. Nil when the
// Machine is gone.
func (r *Reconciler) fresh(ctx context.Context, cached *v1alpha1.Machine) (*v1alpha1.Machine, error) {
	rv, ok := r.written.take(cached.UID)
	if !ok || cached.ResourceVersion == rv || r.APIReader == nil {
		return cached, nil
	}
	live := &v1alpha1.Machine{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cached), live); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil, nil
		}
		// Keep the expectation for the next attempt.
		r.written.record(cached.UID, rv)
		return nil, err
	}
	return live, nil
}
