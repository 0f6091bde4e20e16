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
	l := newLimiter(time.Second, time.Second, func() time.Time { return now })
	a := key{req: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}}}
	b := key{req: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "b"}}}

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

// TestLimiterWindowGrowsWhileEventsKeepComing follows one request through
// a burst, a steady stream and a quiet spell, with windows from 50 to
// 400 ms.
func TestLimiterWindowGrowsWhileEventsKeepComing(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	l := newLimiter(50*time.Millisecond, 400*time.Millisecond, func() time.Time { return now })
	r := key{req: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "set"}}}
	at := func(ms int) time.Duration {
		now = t0.Add(time.Duration(ms) * time.Millisecond)
		return l.delay(r)
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }

	// Let through at 0, 50, 150, 350: each window that events fill doubles
	// the next one.
	assert.Zero(t, at(0), "first event: at once")
	assert.Equal(t, ms(40), at(10), "held to the end of the 50 ms window")
	assert.Equal(t, ms(20), at(30), "rides along with the pending add")
	assert.Equal(t, ms(90), at(60), "next window is 100 ms: due at 150")
	assert.Equal(t, ms(190), at(160), "then 200 ms: due at 350")
	// A steady stream settles at the longest window.
	assert.Equal(t, ms(400), at(350), "then 400 ms: due at 750")
	assert.Equal(t, ms(400), at(750), "400 ms is the longest: due at 1150")
	assert.Equal(t, ms(390), at(1160), "still 400 ms: due at 1550")

	// No event in the window after 1550: the next one is let through at
	// once, and the window is the shortest again.
	assert.Zero(t, at(2000), "quiet for a window: at once")
	assert.Equal(t, ms(40), at(2010), "the shortest window again")
}

// TestCostLengthensTheLongestWindow: a parent whose syncs walk many
// children settles at a longer window in a steady stream, in proportion
// to them; others keep theirs, and a cost of zero gives it back.
func TestCostLengthensTheLongestWindow(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	th := &Throttle{limiter: newLimiter(50*time.Millisecond, 400*time.Millisecond, func() time.Time { return now })}
	big := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "big"}}
	small := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "small"}}
	// steady sends an event every 10 ms for 20 s and returns the last
	// window: the time between the last two adds let through.
	steady := func(r reconcile.Request) time.Duration {
		var dues []time.Time
		for ms := 0; ms < 20000; ms += 10 {
			now = t0.Add(time.Duration(ms) * time.Millisecond)
			due := now.Add(th.limiter.delay(key{req: r}))
			if len(dues) == 0 || !due.Equal(dues[len(dues)-1]) {
				dues = append(dues, due)
			}
		}
		t0 = now.Add(time.Minute) // quiet before the next stream
		return dues[len(dues)-1].Sub(dues[len(dues)-2])
	}

	th.Cost(big, 5000)
	th.Cost(small, 100)
	assert.Equal(t, 5000*PerObject, steady(big), "5000 children: a window of 5000 × PerObject")
	assert.Equal(t, 400*time.Millisecond, steady(small), "100 children: the throttle's longest window")
	th.Cost(big, 0)
	assert.Equal(t, 400*time.Millisecond, steady(big), "cost 0: the throttle's longest window again")
	assert.Empty(t, th.limiter.longer, "a cost within the longest window is not remembered")
}

func TestLimiterForgetsOldRequests(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := newLimiter(time.Second, time.Second, func() time.Time { return now })
	for i := range sweepAbove {
		l.delay(key{req: reconcile.Request{NamespacedName: types.NamespacedName{Name: string(rune('a' + i%26)), Namespace: time.Duration(i).String()}}})
	}
	require.Len(t, l.state, sweepAbove)
	now = now.Add(time.Minute)
	l.delay(key{req: reconcile.Request{NamespacedName: types.NamespacedName{Name: "new"}}})
	assert.Len(t, l.state, 1, "entries whose window has passed are swept")
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
	th := New(time.Hour, time.Hour)
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

// TestHandlerPerStreamHoldsOnlyTheBusyStream: events of one machine set
// hold the deployment's request back; the first event of another set goes
// through at once.
func TestHandlerPerStreamHoldsOnlyTheBusyStream(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	t.Cleanup(q.ShutDown)
	toOwner := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: "owner"}}}
	})
	h := New(time.Hour, time.Hour).HandlerPerStream(toOwner, func(o client.Object) types.UID { return o.GetUID() })
	busy := &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "new", UID: "new-uid"}}
	quiet := &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "old", UID: "old-uid"}}
	ctx := context.Background()
	take := func() {
		t.Helper()
		require.Equal(t, 1, q.Len())
		item, _ := q.Get()
		q.Done(item)
	}

	h.Update(ctx, event.UpdateEvent{ObjectOld: busy, ObjectNew: busy}, q)
	take()
	h.Update(ctx, event.UpdateEvent{ObjectOld: busy, ObjectNew: busy}, q)
	assert.Zero(t, q.Len(), "the busy stream's second event waits for its window")
	h.Update(ctx, event.UpdateEvent{ObjectOld: quiet, ObjectNew: quiet}, q)
	take()
	h.Update(ctx, event.UpdateEvent{ObjectOld: quiet, ObjectNew: quiet}, q)
	assert.Zero(t, q.Len(), "and the other stream then has a window of its own")
}
