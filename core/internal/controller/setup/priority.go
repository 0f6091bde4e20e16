package setup

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The queue priorities of WithPriority's requests; the priority queue
// serves other requests at 0 and the events of an initial list or a resync
// at handler.LowPriority.
const (
	// HighPriority is WithHighPriority's: a change that a health decision
	// or a rollout waits on.
	HighPriority = 10
	// UrgentPriority is above it, for the few changes that a rollout's
	// next step waits on while the rest of a large change is queued at
	// HighPriority (the nodes selected for an in-place update behind the
	// hundreds that just became candidates).
	UrgentPriority = 20
)

// WithHighPriority queues the requests of h ahead of the controller's other
// work when the controller's queue is a priority queue (every controller of
// the manager's is): the machine controller serves a machine whose Node
// just changed (NotReady, deleted, updated in place) before the bulk of a
// thousand creations queued in front of it. Requests h queues at a
// priority of its own (handler.LowPriority for an initial list or a resync,
// which change nothing) keep it. With another queue it is h.
func WithHighPriority[object client.Object](h handler.TypedEventHandler[object, reconcile.Request]) handler.TypedEventHandler[object, reconcile.Request] {
	return WithPriority(h, func(object) int { return HighPriority })
}

// WithPriority is WithHighPriority with the priority chosen per event by
// priority: of the object, or for an update the higher of the old and the
// new object's, so that a change out of a state that matters is served as
// fast as a change into it.
func WithPriority[object client.Object](h handler.TypedEventHandler[object, reconcile.Request], priority func(object) int) handler.TypedEventHandler[object, reconcile.Request] {
	return prioritized[object]{inner: h, priority: priority}
}

type prioritized[object client.Object] struct {
	inner    handler.TypedEventHandler[object, reconcile.Request]
	priority func(object) int
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (p prioritized[object]) Create(ctx context.Context, e event.TypedCreateEvent[object], q queue) {
	p.inner.Create(ctx, e, raise(q, p.priority(e.Object)))
}

func (p prioritized[object]) Update(ctx context.Context, e event.TypedUpdateEvent[object], q queue) {
	p.inner.Update(ctx, e, raise(q, max(p.priority(e.ObjectOld), p.priority(e.ObjectNew))))
}

func (p prioritized[object]) Delete(ctx context.Context, e event.TypedDeleteEvent[object], q queue) {
	p.inner.Delete(ctx, e, raise(q, p.priority(e.Object)))
}

func (p prioritized[object]) Generic(ctx context.Context, e event.TypedGenericEvent[object], q queue) {
	p.inner.Generic(ctx, e, raise(q, p.priority(e.Object)))
}

// raise wraps a priority queue so that a plain Add is an add at priority;
// AddWithOpts, which names its priority, passes through.
func raise(q queue, priority int) queue {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	return raisedQueue{PriorityQueue: pq, priority: priority}
}

type raisedQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
	priority int
}

func (r raisedQueue) Add(item reconcile.Request) {
	r.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(r.priority)}, item)
}

func (r raisedQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		o.Priority = ptr.To(r.priority)
	}
	r.PriorityQueue.AddWithOpts(o, items...)
}
