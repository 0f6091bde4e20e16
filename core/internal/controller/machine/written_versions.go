package machine

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// The Reconciler remembers the resourceVersion of its last write to each
// Machine (r.written, a setup.Written) until the cache shows that write. The
// cache that reconciles read from lags behind the API server: a reconcile
// right after a write (the deletion flow requeues at once) could otherwise
// read the Machine as it was before the write, and run a step with side
// effects (a DeleteMachine, a drain pass) a second time, or take an old
// phase for the current one. The lag is usually milliseconds, but after an
// API server outage a cache's watch may wait out its reconnect backoff (up
// to half a minute) while the Node cache already shows a Node Ready again:
// every reconcile in that time must read the Machine from the API server,
// not just the first one after the write.
//
// The writes are timed by the wall clock, not the Reconciler's clock: they
// measure how long the cache lags, and a test's clock may jump by hours.

// recordWrite remembers m's resourceVersion, the API server's answer to this
// controller's write.
func (r *Reconciler) recordWrite(m *v1alpha1.Machine) {
	r.written.Record(m.UID, m.ResourceVersion, struct{}{}, time.Now())
}

// fresh returns the Machine as the reconcile must see it: the cached one,
// unless the controller wrote the Machine since and the cache does not
// show that write (or a later version) yet; then it is read from the API
// server, and the write stays recorded until the cache shows it. Nil when
// the Machine is gone.
func (r *Reconciler) fresh(ctx context.Context, cached *v1alpha1.Machine) (*v1alpha1.Machine, error) {
	wr, freshness := r.written.Check(cached, time.Now())
	if freshness == setup.Fresh || r.APIReader == nil {
		return cached, nil
	}
	live := &v1alpha1.Machine{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cached), live); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.written.ForgetVersion(cached.UID, wr.Version)
			return nil, nil
		}
		return nil, err
	}
	if freshness == setup.Unordered {
		// Versions this API server does not let us compare: trust the
		// cache again from the next reconcile on.
		r.written.ForgetVersion(cached.UID, wr.Version)
	}
	return live, nil
}
