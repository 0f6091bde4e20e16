package throttle

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func TestLimiterLetsTheFirstThroughAndHoldsTheRestOfTheWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	l := &limiter{window: time.Second, now: func() time.Time { return now }}
	a := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}
	b := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "b"}}

	assert.Zero(t, l.delay(a), "first event: at once")
	assert.Zero(t, l.delay(b), "another request has its own window")

	now = t0.Add(100 * time.Millisecond)
	assert.Equal(t, 900*time.Millisecond, l.delay(a), "within the window: at its end")
	now = t0.Add(300 * time.Millisecond)
	assert.Equal(t, 700*time.Millisecond, l.delay(a), "an add is pending: the same time, not a later one")

	now = t0.Add(1500 * time.Millisecond)
	assert.Equal(t, 500*time.Millisecond, l.delay(a), "the window after the held add")

	now = t0.Add(5 * time.Second)
	assert.Zero(t, l.delay(a), "quiet for a window: at once again")
}

func TestLimiterForgetsOldRequests(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &limiter{window: time.Second, now: func() time.Time { return now }}
	for i := range sweepAbove {
		l.delay(reconcile.Request{NamespacedName: types.NamespacedName{Name: string(rune('a' + i%26)), Namespace: time.Duration(i).String()}})
	}
	require.Len(t, l.last, sweepAbove)
	now = now.Add(time.Minute)
	l.delay(reconcile.Request{NamespacedName: types.NamespacedName{Name: "new"}})
	assert.Len(t, l.last, 1, "entries older than the window are swept")
}

// TestHandlerDelaysThroughTheWorkQueue drives a real work queue: the first
// event's request is queued at once; the next one, within the window, is
// not (it waits for the window's end).
func TestHandlerDelaysThroughTheWorkQueue(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	toOwner := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: "owner"}}}
	})
	th := New(time.Hour)
	h, other := th.Handler(toOwner), th.Handler(toOwner)
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m1"}}
	ctx := context.Background()

	h.Create(ctx, event.CreateEvent{Object: m}, q)
	require.Equal(t, 1, q.Len())
	item, _ := q.Get()
	assert.Equal(t, "owner", item.Name)
	q.Done(item)

	h.Update(ctx, event.UpdateEvent{ObjectOld: m, ObjectNew: m}, q)
	h.Delete(ctx, event.DeleteEvent{Object: m}, q)
	other.Generic(ctx, event.GenericEvent{Object: m}, q)
	assert.Zero(t, q.Len(), "held for the rest of the window, by every handler of the throttle")
}
