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

// HighPriority is the queue priority of WithHighPriority's requests; the
// priority queue serves other requests at 0 and the events of an initial
// list or a resync at handler.LowPriority.
const HighPriority = 10

// WithHighPriority queues the requests of h ahead of the controller's other
// work when the controller's queue is a priority queue (every controller of
// the manager's is): the machine controller serves a machine whose Node
// just changed (NotReady, deleted, updated in place) before the bulk of a
// thousand creations queued in front of it. Requests h queues at a
// priority of its own (handler.LowPriority for an initial list or a resync,
// which change nothing) keep it. With another queue it is h.
func WithHighPriority[object client.Object](h handler.TypedEventHandler[object, reconcile.Request]) handler.TypedEventHandler[object, reconcile.Request] {
	return prioritized[object]{inner: h}
}

type prioritized[object client.Object] struct {
	inner handler.TypedEventHandler[object, reconcile.Request]
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (p prioritized[object]) Create(ctx context.Context, e event.TypedCreateEvent[object], q queue) {
	p.inner.Create(ctx, e, raise(q))
}

func (p prioritized[object]) Update(ctx context.Context, e event.TypedUpdateEvent[object], q queue) {
	p.inner.Update(ctx, e, raise(q))
}

func (p prioritized[object]) Delete(ctx context.Context, e event.TypedDeleteEvent[object], q queue) {
	p.inner.Delete(ctx, e, raise(q))
}

func (p prioritized[object]) Generic(ctx context.Context, e event.TypedGenericEvent[object], q queue) {
	p.inner.Generic(ctx, e, raise(q))
}

// raise wraps a priority queue so that a plain Add is an add at
// HighPriority; AddWithOpts, which names its priority, passes through.
func raise(q queue) queue {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	return highQueue{PriorityQueue: pq}
}

type highQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func (h highQueue) Add(item reconcile.Request) {
	h.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(HighPriority)}, item)
}

func (h highQueue) AddWithOpts(o priorityqueue.AddOpts, items ...reconcile.Request) {
	if o.Priority == nil {
		o.Priority = ptr.To(HighPriority)
	}
	h.PriorityQueue.AddWithOpts(o, items...)
}
