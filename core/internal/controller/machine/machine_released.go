package machine

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/cache"
)

// releasedTTL is how long a released machine is remembered: far longer
// than a cache takes to show a deletion. releasedMax bounds the memory: a
// scale-down of more machines than that within releasedTTL forgets the
// oldest, which at worst run a deletion step again (every step is safe to
// repeat).
const (
	releasedTTL = 5 * time.Minute
	releasedMax = 10000
)

// releasedMachines remembers the machines whose finalizer this controller
// removed. The cache may still show such a machine, with the deletion step
// it had when the reconcile that finished it began, and an event of its
// Node (deleted in that reconcile) brings a reconcile of it: run from that
// stale copy, the deletion would start over and call DeleteMachine again.
// A released machine is done; a reconcile of it does nothing.
type releasedMachines struct {
	once sync.Once
	uids *cache.LRUExpireCache
}

func (r *releasedMachines) cache() *cache.LRUExpireCache {
	r.once.Do(func() { r.uids = cache.NewLRUExpireCache(releasedMax) })
	return r.uids
}

func (r *releasedMachines) add(uid types.UID) {
	r.cache().Add(uid, struct{}{}, releasedTTL)
}

func (r *releasedMachines) has(uid types.UID) bool {
	_, ok := r.cache().Get(uid)
	return ok
}
