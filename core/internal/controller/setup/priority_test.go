package setup

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestWithHighPriority runs the handler against controller-runtime's own
// priority queue: a changed Node's machine is served before work queued
// earlier at the default priority, while an initial list and a resync
// (which change nothing) stay low.
func TestWithHighPriority(t *testing.T) {
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	h := WithHighPriority(handler.TypedEnqueueRequestsFromMapFunc(machineOfNode))
	node := func(name, rv string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}

	// A creation queued first, at the default priority.
	q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "new-machine"}})
	// A resync of one Node (same resource version) and an initial list of another.
	h.Update(ctx, event.TypedUpdateEvent[*corev1.Node]{ObjectOld: node("resynced", "5"), ObjectNew: node("resynced", "5")}, q)
	h.Create(ctx, event.TypedCreateEvent[*corev1.Node]{Object: node("listed", "3"), IsInInitialList: true}, q)
	// A Node that changed, queued last.
	h.Update(ctx, event.TypedUpdateEvent[*corev1.Node]{ObjectOld: node("changed", "6"), ObjectNew: node("changed", "7")}, q)

	requireServed(t, q, []served{
		{"machine-of-changed", HighPriority},
		{"new-machine", 0},
		{"machine-of-resynced", handler.LowPriority},
		{"machine-of-listed", handler.LowPriority},
	})
}

// TestWithHighPriorityOtherQueue: with a plain queue the handler is the
// inner one.
func TestWithHighPriorityOtherQueue(t *testing.T) {
	q := newPlainQueue()
	defer q.ShutDown()
	h := WithHighPriority(handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, n client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: n.GetName()}}}
	}))
	h.Create(context.Background(), event.TypedCreateEvent[client.Object]{Object: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}, q)
	item, shutdown := q.Get()
	require.False(t, shutdown)
	assert.Equal(t, "n1", item.Name)
}

func newPlainQueue() queue {
	return workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
}

// TestWithPriority: the priority is chosen per event, and an update takes
// the higher of its two objects' (a change out of an urgent state is as
// urgent as one into it).
func TestWithPriority(t *testing.T) {
	ctx := context.Background()
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	urgentIfMarked := func(n *corev1.Node) int {
		if n.Labels["urgent"] == "true" {
			return UrgentPriority
		}
		return HighPriority
	}
	h := WithPriority(handler.TypedEnqueueRequestsFromMapFunc(machineOfNode), urgentIfMarked)
	node := func(name, rv string, urgent bool) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
		if urgent {
			n.Labels = map[string]string{"urgent": "true"}
		}
		return n
	}

	h.Update(ctx, event.TypedUpdateEvent[*corev1.Node]{ObjectOld: node("plain", "1", false), ObjectNew: node("plain", "2", false)}, q)
	h.Update(ctx, event.TypedUpdateEvent[*corev1.Node]{ObjectOld: node("into", "1", false), ObjectNew: node("into", "2", true)}, q)
	h.Update(ctx, event.TypedUpdateEvent[*corev1.Node]{ObjectOld: node("out-of", "1", true), ObjectNew: node("out-of", "2", false)}, q)
	h.Delete(ctx, event.TypedDeleteEvent[*corev1.Node]{Object: node("deleted", "3", false)}, q)
	// A resync keeps the handler's own low priority, urgent or not.
	h.Update(ctx, event.TypedUpdateEvent[*corev1.Node]{ObjectOld: node("resynced", "5", true), ObjectNew: node("resynced", "5", true)}, q)

	requireServed(t, q, []served{
		{"machine-of-into", UrgentPriority},
		{"machine-of-out-of", UrgentPriority},
		{"machine-of-plain", HighPriority},
		{"machine-of-deleted", HighPriority},
		{"machine-of-resynced", handler.LowPriority},
	})
}

// served is a request the queue hands out, and at which priority.
type served struct {
	name     string
	priority int
}

// requireServed takes every request of q and requires them in want's
// order and priorities.
func requireServed(t *testing.T, q priorityqueue.PriorityQueue[reconcile.Request], want []served) {
	t.Helper()
	for _, w := range want {
		item, priority, shutdown := q.GetWithPriority()
		require.False(t, shutdown)
		assert.Equal(t, w.name, item.Name)
		assert.Equal(t, w.priority, priority, item.Name)
		q.Done(item)
	}
	assert.Equal(t, 0, q.Len())
}

// machineOfNode maps a Node to the request of a machine named after it.
func machineOfNode(_ context.Context, n *corev1.Node) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "machine-of-" + n.Name}}}
}
