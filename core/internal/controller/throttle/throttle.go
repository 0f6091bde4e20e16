// Package throttle limits how often events about many objects sync the one
// object they map to: a MachineSet hears of every change of each of its
// machines, and a MachineDeployment of every change of its sets, so a
// scale-up of a thousand machines would sync (and write the status of) the
// set and the deployment a thousand times each. Throttled, each syncs at
// once on the first event after a quiet spell, then once per window while
// events keep coming; the sync that ends a window sees every change made
// during it.
//
// The window starts short and doubles with each window that events fill, up
// to a longest one; a window without events makes it short again. A burst
// (the machines of one rollout wave turning Running within a few hundred
// milliseconds) is so synced a moment after its last event, not a whole long
// window later, while a steady stream (a scale-up of a thousand machines)
// settles at one sync per longest window.
//
// A sync of a parent walks all of its children, so a parent of many costs
// more per sync: its controller reports how many it walked (Cost), and its
// longest window grows with them (PerObject each) beyond the longest one.
// A steady stream then walks at most one child per PerObject and parent,
// whatever the parent's size, instead of all of them twice a second: the
// work of a scale-up grows with its machines, not with their square.
package throttle

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The windows the set and deployment controllers use. The shortest is
// short next to a machine's start-up; the longest keeps a fleet changing
// at once to two syncs a second per parent, not one per machine.
const (
	ShortestWindow = 50 * time.Millisecond
	LongestWindow  = 500 * time.Millisecond
)

// PerObject is the longest window per object a parent's sync walks
// (Cost): a parent of up to LongestWindow/PerObject (1000) children keeps
// LongestWindow, one of 5000 settles at a sync every 2.5 s while events
// keep coming.
const PerObject = 500 * time.Microsecond

// Throttle holds back requests per window. The handlers of one Throttle
// share it, so that a controller's watches on different kinds add up to
// one sync per window and stream (one stream for every event of Handler).
type Throttle struct {
	limiter *limiter
}

// New returns a Throttle whose windows grow from shortest to longest.
func New(shortest, longest time.Duration) *Throttle {
	return &Throttle{limiter: newLimiter(shortest, longest, time.Now)}
}

// Cost records that the last sync of r walked n objects; r's longest
// window is then the larger of the Throttle's and n × PerObject. A parent
// that is gone should report 0, which forgets it.
func (t *Throttle) Cost(r reconcile.Request, n int) {
	t.limiter.cost(r, time.Duration(n)*PerObject)
}

// Handler wraps inner so that every request it enqueues is added at once
// when the same request's last window has passed, and else at the end of
// its window. Requests that wait are not lost: the work queue
// keeps each one once, and adds of a request already waiting merge.
func (t *Throttle) Handler(inner handler.EventHandler) handler.EventHandler {
	return t.HandlerPerStream(inner, func(client.Object) types.UID { return "" })
}

// HandlerPerStream is Handler with a window per request and stream: the
// events of one stream (stream returns its key for an event's object) are
// throttled together, and do not hold back those of another. A deployment
// keys its events by machine set, so that the one status change of an old
// set that has just deleted its machines is not held behind the window
// that the new set's stream of status changes keeps long.
func (t *Throttle) HandlerPerStream(inner handler.EventHandler, stream func(client.Object) types.UID) handler.EventHandler {
	return &throttled{inner: inner, limiter: t.limiter, stream: stream}
}

type throttled struct {
	inner   handler.EventHandler
	limiter *limiter
	stream  func(client.Object) types.UID
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (t *throttled) Create(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
	t.inner.Create(ctx, e, t.wrap(q, e.Object))
}

func (t *throttled) Update(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
	t.inner.Update(ctx, e, t.wrap(q, e.ObjectNew))
}

func (t *throttled) Delete(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
	t.inner.Delete(ctx, e, t.wrap(q, e.Object))
}

func (t *throttled) Generic(ctx context.Context, e event.TypedGenericEvent[client.Object], q queue) {
	t.inner.Generic(ctx, e, t.wrap(q, e.Object))
}

// wrap returns q with Add throttled. The wrapper does not implement the
// priority queue's AddWithOpts, so handlers fall back to Add.
func (t *throttled) wrap(q queue, obj client.Object) queue {
	return throttledQueue{queue: q, limiter: t.limiter, stream: t.stream(obj)}
}

type throttledQueue struct {
	queue
	limiter *limiter
	stream  types.UID
}

func (q throttledQueue) Add(r reconcile.Request) {
	if wait := q.limiter.delay(key{r, q.stream}); wait > 0 {
		q.AddAfter(r, wait)
		return
	}
	q.queue.Add(r)
}

// limiter remembers, per request and stream, when it was last let through
// (or is due to be) and its current window.
type limiter struct {
	shortest, longest time.Duration
	now               func() time.Time

	mu    sync.Mutex
	state map[key]window
	// longer holds the requests whose longest window Cost made longer
	// than longest.
	longer map[reconcile.Request]time.Duration
}

// key is what a window is kept for: a request, and the stream of events
// (empty for all of them).
type key struct {
	req    reconcile.Request
	stream types.UID
}

// window is one request's: due is when it was last let through or is
// next due, length how long after due the next add is held.
type window struct {
	due    time.Time
	length time.Duration
}

func newLimiter(shortest, longest time.Duration, now func() time.Time) *limiter {
	return &limiter{shortest: shortest, longest: max(longest, shortest), now: now, state: map[key]window{},
		longer: map[reconcile.Request]time.Duration{}}
}

// cost sets r's longest window to longest, if longer than the limiter's.
func (l *limiter) cost(r reconcile.Request, longest time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if longest <= l.longest {
		delete(l.longer, r)
		return
	}
	l.longer[r] = longest
}

// sweepAbove is the number of remembered requests above which the ones
// whose window has passed are forgotten.
const sweepAbove = 256

// delay returns how long to hold r back: the time until a pending add when
// one is due; the rest of the window when r was let through within it (the
// next window doubles: events keep coming); else zero, and the window is
// the shortest again.
func (l *limiter) delay(r key) time.Duration {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	w, seen := l.state[r]
	switch {
	case seen && w.due.After(now):
		// An add is already due; this change rides along.
		return w.due.Sub(now)
	case seen && now.Before(w.due.Add(w.length)):
		w.due = w.due.Add(w.length)
		w.length = min(2*w.length, max(l.longest, l.longer[r.req]))
		l.state[r] = w
		return w.due.Sub(now)
	}
	if len(l.state) >= sweepAbove {
		for k, w := range l.state {
			if !now.Before(w.due.Add(w.length)) {
				delete(l.state, k)
			}
		}
	}
	l.state[r] = window{due: now, length: l.shortest}
	return 0
}
