package setup

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultWrittenTTL is how long Written remembers a write the cache never
// shows: far longer than a cache lags (a watch waits out a reconnect backoff
// of at most half a minute after an API server outage), short enough that
// the write to an object deleted meanwhile, whose UID is never reconciled
// again, does not stay in memory for good.
const DefaultWrittenTTL = 5 * time.Minute

// Written remembers a controller's own writes, per object (by UID), until
// its cache shows them. The cache a reconcile reads from lags behind the API
// server: a reconcile right after a write may read the object as it was
// before it, and run a step with side effects a second time. A controller
// records each write it makes (Record), asks whether the cached copy it
// reads shows it (Check), and reads the object from the API server, or takes
// what it wrote for what the cache shows, while it does not.
//
// The zero value is ready to use and safe for concurrent reconciles. V is
// what a write did, for a controller that needs it (the set a machine moved
// to); struct{} when the version is enough.
type Written[V any] struct {
	// TTL is how long a write is remembered; 0 means DefaultWrittenTTL.
	TTL time.Duration

	mu     sync.Mutex
	writes map[types.UID]Write[V]
	swept  time.Time
}

// Write is one remembered write.
type Write[V any] struct {
	// Version is the object's resourceVersion in the API server's answer to
	// the write; "" when the writer did not keep it.
	Version string
	// Value is what the write did.
	Value V
	// At is when the write was recorded.
	At time.Time
}

// Freshness says whether a cached copy shows the write recorded for it.
type Freshness int

const (
	// Fresh: no write is recorded for the object, or the cached copy shows
	// it (its resourceVersion is the write's or a later one).
	Fresh Freshness = iota
	// Stale: the cached copy is older than the recorded write.
	Stale
	// Unordered: the versions cannot be compared (an API server whose
	// resourceVersions are not the integers etcd gives, or a write recorded
	// without a version); the caller decides.
	Unordered
)

// Record remembers a write to the object uid, which the API server answered
// with the object at version; it replaces an earlier write to the object.
func (w *Written[V]) Record(uid types.UID, version string, value V, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.writes == nil {
		w.writes = map[types.UID]Write[V]{}
	}
	w.sweep(now)
	w.writes[uid] = Write[V]{Version: version, Value: value, At: now}
}

// Get returns the write recorded for uid, unless it is older than the TTL
// (then it is forgotten).
func (w *Written[V]) Get(uid types.UID, now time.Time) (Write[V], bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.get(uid, now)
}

func (w *Written[V]) get(uid types.UID, now time.Time) (Write[V], bool) {
	wr, ok := w.writes[uid]
	if ok && now.Sub(wr.At) > w.ttl() {
		delete(w.writes, uid)
		return Write[V]{}, false
	}
	return wr, ok
}

// Check reports whether cached shows the write recorded for its UID. A
// write it shows is forgotten (the cache has caught up); a stale or
// unordered one stays recorded, with the write returned.
func (w *Written[V]) Check(cached client.Object, now time.Time) (Write[V], Freshness) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wr, ok := w.get(cached.GetUID(), now)
	if !ok {
		return Write[V]{}, Fresh
	}
	rv := cached.GetResourceVersion()
	if rv == wr.Version {
		delete(w.writes, cached.GetUID())
		return wr, Fresh
	}
	order, err := resourceversion.CompareResourceVersion(rv, wr.Version)
	switch {
	case err != nil:
		return wr, Unordered
	case order >= 0:
		delete(w.writes, cached.GetUID())
		return wr, Fresh
	}
	return wr, Stale
}

// Forget forgets the write recorded for uid (the object is gone).
func (w *Written[V]) Forget(uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.writes, uid)
}

// ForgetVersion forgets the write recorded for uid if it is still the one
// at version: a write made meanwhile stays recorded.
func (w *Written[V]) ForgetVersion(uid types.UID, version string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wr, ok := w.writes[uid]; ok && wr.Version == version {
		delete(w.writes, uid)
	}
}

// sweep forgets the writes older than the TTL, at most once per TTL: a
// write to an object never reconciled again is not asked for by Get.
func (w *Written[V]) sweep(now time.Time) {
	ttl := w.ttl()
	if now.Sub(w.swept) < ttl {
		return
	}
	w.swept = now
	for uid, wr := range w.writes {
		if now.Sub(wr.At) > ttl {
			delete(w.writes, uid)
		}
	}
}

func (w *Written[V]) ttl() time.Duration {
	if w.TTL > 0 {
		return w.TTL
	}
	return DefaultWrittenTTL
}
