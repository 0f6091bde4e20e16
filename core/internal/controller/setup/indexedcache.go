package setup

import (
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// NewIndexedCache is the manager's cache.NewCacheFunc: controller-runtime's
// cache, which also hands CachedMachines the index of its Machine informer.
//
// A cache of named namespaces (cache.Options.DefaultNamespaces, as the
// manager's is: MCM's scoping to one namespace) wraps each namespace's
// informer in one that does not expose its index, and its List copies
// every object into the list (meta.SetList). An indexed cache records the
// informers it builds (cache.Options.NewInformer, after the one given), so
// that where there is exactly one informer of a type, its index is read
// directly (Indexes).
func NewIndexedCache(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	built := &builtInformers{byType: map[reflect.Type][]toolscache.SharedIndexInformer{}}
	next := opts.NewInformer
	if next == nil {
		next = toolscache.NewSharedIndexInformer
	}
	opts.NewInformer = func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		inf := next(lw, obj, resync, indexers)
		built.add(obj, inf)
		return inf
	}
	c, err := cache.New(config, opts)
	if err != nil {
		return nil, err
	}
	return &indexedCache{Cache: c, built: built}, nil
}

// Indexes is a cache that hands out the index of its one informer of a
// type: NewIndexedCache's, and a wrapper of it that passes the call on.
type Indexes interface {
	// OnlyIndexer returns the index of the one informer the cache built for
	// obj's type; ok is false while there is none, or several (one per
	// namespace: which holds a namespace is not known here), or it has not
	// had its first list.
	OnlyIndexer(obj runtime.Object) (toolscache.Indexer, bool)
}

// indexedCache is a cache built by NewIndexedCache.
type indexedCache struct {
	cache.Cache
	built *builtInformers
}

func (c *indexedCache) OnlyIndexer(obj runtime.Object) (toolscache.Indexer, bool) {
	return c.built.only(obj)
}

// builtInformers are the informers a cache built, by object type.
type builtInformers struct {
	mu     sync.Mutex
	byType map[reflect.Type][]toolscache.SharedIndexInformer
}

func (b *builtInformers) add(obj runtime.Object, inf toolscache.SharedIndexInformer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := reflect.TypeOf(obj)
	b.byType[t] = append(b.byType[t], inf)
}

func (b *builtInformers) only(obj runtime.Object) (toolscache.Indexer, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	infs := b.byType[reflect.TypeOf(obj)]
	// Before its first list an informer's index is incomplete.
	if len(infs) != 1 || !infs[0].HasSynced() {
		return nil, false
	}
	return infs[0].GetIndexer(), true
}
