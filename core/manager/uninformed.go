package manager

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/internal/controller/setup"
)

// uninformedReads records the cached reads of kinds that no informer
// covers, in a manager built with failOnUninformedReads (the package's
// tests). Without that option such a read starts the kind's informer and
// waits for its first list, holding every reconcile that reads the kind
// meanwhile; with it the read fails (cache.ErrResourceNotCached) and is
// recorded here, by the error's type rather than its wording.
type uninformedReads struct {
	mu    sync.Mutex
	kinds map[string]bool // the errors' texts: "<gvk> is not cached"
}

// newCache wraps next: the cache it builds refuses reads of uninformed
// kinds and records them.
func (u *uninformedReads) newCache(next cache.NewCacheFunc) cache.NewCacheFunc {
	return func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
		opts.ReaderFailOnMissingInformer = true
		c, err := next(config, opts)
		if err != nil {
			return nil, err
		}
		return &recordingCache{Cache: c, reads: u}, nil
	}
}

// list returns the kinds read uninformed, sorted ("<gvk> is not cached").
func (u *uninformedReads) list() []string {
	if u == nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Sorted(maps.Keys(u.kinds))
}

func (u *uninformedReads) note(err error) error {
	var notCached *cache.ErrResourceNotCached
	if errors.As(err, &notCached) {
		u.mu.Lock()
		if u.kinds == nil {
			u.kinds = map[string]bool{}
		}
		u.kinds[notCached.Error()] = true
		u.mu.Unlock()
	}
	return err
}

// recordingCache is a cache whose reads of uninformed kinds are recorded.
type recordingCache struct {
	cache.Cache
	reads *uninformedReads
}

func (c *recordingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reads.note(c.Cache.Get(ctx, key, obj, opts...))
}

func (c *recordingCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.reads.note(c.Cache.List(ctx, list, opts...))
}

// OnlyIndexer passes on the wrapped cache's index (setup.Indexes).
func (c *recordingCache) OnlyIndexer(obj runtime.Object) (toolscache.Indexer, bool) {
	if ix, ok := c.Cache.(setup.Indexes); ok {
		return ix.OnlyIndexer(obj)
	}
	return nil, false
}
