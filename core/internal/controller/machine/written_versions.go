package machine

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// writtenVersions remembers the resourceVersion of the controller's last
// write to each Machine, until the cache shows that write. The cache that
// reconciles read from lags behind the API server: a reconcile right after
// a write (the deletion flow requeues at once) could otherwise read the
// Machine as it was before the write, and run a step with side effects (a
// DeleteMachine, a drain pass) a second time, or take an old phase for the
// current one. The lag is usually milliseconds, but after an API server
// outage a cache's watch may wait out its reconnect backoff (up to half a
// minute) while the Node cache already shows a Node Ready again: every
// reconcile in that time must read the Machine from the API server, not
// just the first one after the write.
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

func (w *writtenVersions) get(uid types.UID) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rv, ok := w.rv[uid]
	return rv, ok
}

// forgetVersion forgets the recorded version if it is still rv (a write
// made meanwhile stays recorded).
func (w *writtenVersions) forgetVersion(uid types.UID, rv string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rv[uid] == rv {
		delete(w.rv, uid)
	}
}

func (w *writtenVersions) forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.rv, uid)
}

// fresh returns the Machine as the reconcile must see it: the cached one,
// unless the controller wrote the Machine since and the cache does not
// show that write (or a later version) yet; then it is read from the API
// server, and the expectation stays until the cache shows the write. Nil
// when the Machine is gone.
func (r *Reconciler) fresh(ctx context.Context, cached *v1alpha1.Machine) (*v1alpha1.Machine, error) {
	rv, ok := r.written.get(cached.UID)
	if !ok || r.APIReader == nil {
		return cached, nil
	}
	order, cmpErr := resourceversion.CompareResourceVersion(cached.ResourceVersion, rv)
	if cached.ResourceVersion == rv || (cmpErr == nil && order >= 0) {
		r.written.forgetVersion(cached.UID, rv)
		return cached, nil
	}
	live := &v1alpha1.Machine{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cached), live); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.written.forgetVersion(cached.UID, rv)
			return nil, nil
		}
		return nil, err
	}
	if cmpErr != nil {
		// Versions this API server does not let us compare: trust the
		// cache again from the next reconcile on.
		r.written.forgetVersion(cached.UID, rv)
	}
	return live, nil
}
