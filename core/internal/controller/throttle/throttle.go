// Package throttle limits how often events about many objects sync the one
// object they map to: a MachineSet hears of every change of each of its
// machines, and a MachineDeployment of every change of its sets, so a
// scale-up of a thousand machines would sync (and write the status of) the
// set and the deployment a thousand times each. Throttled, each syncs at
// once on the first event, then at most once per window while events keep
// coming; the sync that ends a window sees every change made during it.
package throttle

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Window is the throttle the set and deployment controllers use: short
// next to a machine's start-up, long enough that a fleet changing at once
// costs each parent two syncs a second, not one per machine.
const Window = 500 * time.Millisecond

// Throttle holds back requests per window. The handlers of one Throttle
// share it, so that a controller's watches on different kinds (a
// deployment's sets and machines) add up to one sync per window.
type Throttle struct {
	limiter *limiter
}

// New returns a Throttle that lets a request through at most once per
// window.
func New(window time.Duration) *Throttle {
	return &Throttle{limiter: &limiter{window: window, now: time.Now}}
}

// Handler wraps inner so that every request it enqueues is added at once
// when the same request was not added within the last window, and else at
// the end of that window. Requests that wait are not lost: the work queue
// keeps each one once, and adds of a request already waiting merge.
func (t *Throttle) Handler(inner handler.EventHandler) handler.EventHandler {
	return &throttled{inner: inner, limiter: t.limiter}
}

type throttled struct {
	inner   handler.EventHandler
	limiter *limiter
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (t *throttled) Create(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
	t.inner.Create(ctx, e, t.wrap(q))
}

func (t *throttled) Update(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
	t.inner.Update(ctx, e, t.wrap(q))
}

func (t *throttled) Delete(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
	t.inner.Delete(ctx, e, t.wrap(q))
}

func (t *throttled) Generic(ctx context.Context, e event.TypedGenericEvent[client.Object], q queue) {
	t.inner.Generic(ctx, e, t.wrap(q))
}

// wrap returns q with Add throttled. The wrapper does not implement the
// priority queue's AddWithOpts, so handlers fall back to Add.
func (t *throttled) wrap(q queue) queue {
	return throttledQueue{queue: q, limiter: t.limiter}
}

type throttledQueue struct {
	queue
	limiter *limiter
}

func (q throttledQueue) Add(r reconcile.Request) {
	if wait := q.limiter.delay(r); wait > 0 {
		q.AddAfter(r, wait)
		return
	}
	q.queue.Add(r)
}

// limiter remembers, per request, when it was last let through (or is due
// to be).
type limiter struct {
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	last map[reconcile.Request]time.Time
}

// sweepAbove is the number of remembered requests above which the ones
// whose window has passed are forgotten.
const sweepAbove = 256

// delay returns how long to hold r back: zero when its last window has
// passed, the time until a pending add when one is due, else the rest of
// the window that began with the last add.
func (l *limiter) delay(r reconcile.Request) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last == nil {
		l.last = map[reconcile.Request]time.Time{}
	}
	last, seen := l.last[r]
	switch {
	case seen && last.After(now):
		// An add is already due at last; this change rides along.
		return last.Sub(now)
	case seen && now.Before(last.Add(l.window)):
		due := last.Add(l.window)
		l.last[r] = due
		return due.Sub(now)
	}
	if len(l.last) >= sweepAbove {
		for k, t := range l.last {
			if now.Sub(t) >= l.window {
				delete(l.last, k)
			}
		}
	}
	l.last[r] = now
	return 0
}
