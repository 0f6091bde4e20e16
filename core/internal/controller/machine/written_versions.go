package machine

import (
	"time"

	"github.com/machina-io/machina/core/api/v1alpha1"
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
// Reconcile reads each Machine through setup.ReadFresh: the cached one,
// unless the controller wrote the Machine since and the cache does not show
// that write (or a later version) yet; then it is read from the API server
// (r.APIReader), and the write stays recorded until the cache shows it.
//
// The writes are timed by the wall clock, not the Reconciler's clock: they
// measure how long the cache lags, and a test's clock may jump by hours.

// recordWrite remembers m's resourceVersion, the API server's answer to this
// controller's write.
func (r *Reconciler) recordWrite(m *v1alpha1.Machine) {
	r.written.Record(m.UID, m.ResourceVersion, struct{}{}, time.Now())
}
