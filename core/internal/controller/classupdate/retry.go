package classupdate

import (
	"time"

	"google.golang.org/grpc/codes"

	"github.com/machina-io/machina/core/internal/driver"
)

// retryAfter is how long a machine whose UpdateMachine failed with code
// waits before it is tried again, as the Driver API's error table of
// UpdateMachine says (§6.7.4): a transient failure soon, a broken driver
// (UNIMPLEMENTED although advertised) after the long period, anything else
// after the medium one.
func (o Options) retryAfter(code codes.Code) time.Duration {
	switch {
	case driver.IsTransient(code) || code == codes.Canceled:
		return o.ShortRetry
	case code == codes.Unimplemented:
		return o.LongRetry
	}
	return o.MediumRetry
}

// waitingUntil returns when a failed update of machine uid to hash may be
// tried again; zero when it may now.
func (r *Reconciler) waitingUntil(uid, hash string, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.retryAt[retryKey{uid, hash}]
	if !ok || !now.Before(at) {
		delete(r.retryAt, retryKey{uid, hash})
		return time.Time{}
	}
	return at
}

func (r *Reconciler) retryLater(uid, hash string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retryAt[retryKey{uid, hash}] = at
}

// handled reports whether the machine's update to hash was answered (applied
// or refused) by this reconciler: the answer is written, and the cache may
// not show it yet. Asking again would be harmless (UpdateMachine is
// idempotent) but is a needless call.
func (r *Reconciler) handled(uid, hash string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.answered[retryKey{uid, hash}]
}

func (r *Reconciler) markHandled(uid, hash string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answered[retryKey{uid, hash}] = true
}

// forgetHandled drops the mark once the cache shows the answer.
func (r *Reconciler) forgetHandled(uid, hash string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.answered, retryKey{uid, hash})
}
