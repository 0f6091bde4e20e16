package setup

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// CachedMachines reads the manager's cached Machines through a field index
// and hands out the cache's own objects, which callers only read (copy one
// before changing it). A client.List, even with UnsafeDisableDeepCopy,
// copies every Machine into the list by value (meta.SetList): with walks of
// a parent's machines on every throttled sync, that was 15% of the
// manager's CPU in a scale-up of 5000 (docs/performance.md).
type CachedMachines struct {
	// Cache is the manager's cache; nil lists through Client instead (a
	// reconciler given a client of its own, in tests).
	Cache cache.Cache
	// Client lists where Cache is nil or has no informer index.
	Client client.Reader
}

// NewCachedMachines reads through mgrCache when c is the manager's client,
// whose reads that cache serves, and lists through c otherwise.
func NewCachedMachines(c, mgrClient client.Client, mgrCache cache.Cache) CachedMachines {
	if c == mgrClient {
		return CachedMachines{Cache: mgrCache, Client: c}
	}
	return CachedMachines{Client: c}
}

// ByField returns the machines of namespace ns whose index field (as
// registered with the manager's field indexer) has value.
func (c CachedMachines) ByField(ctx context.Context, ns, field, value string) ([]*v1alpha1.Machine, error) {
	if objs, ok := c.fromIndexer(ctx, ns, field, value); ok {
		out := make([]*v1alpha1.Machine, 0, len(objs))
		for _, o := range objs {
			m, isMachine := o.(*v1alpha1.Machine)
			if !isMachine {
				return nil, fmt.Errorf("the machine cache holds a %T", o)
			}
			out = append(out, m)
		}
		return out, nil
	}
	if c.Client == nil {
		return nil, fmt.Errorf("reading machines by %s: no client (set up the controller with its manager)", field)
	}
	list := &v1alpha1.MachineList{}
	if err := c.Client.List(ctx, list, client.InNamespace(ns), client.MatchingFields{field: value}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.Machine, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// fromIndexer reads the informer's index the way controller-runtime's cache
// reader does for an exact field match in one namespace ("field:<name>",
// "<namespace>/<value>"), from the index indexer finds; ok is false where
// there is none.
// TestCachedMachinesMatchList holds the two readers to the same answers.
func (c CachedMachines) fromIndexer(ctx context.Context, ns, field, value string) ([]any, bool) {
	if c.Cache == nil || ns == "" {
		return nil, false
	}
	indexer, ok := c.indexer(ctx)
	if !ok {
		return nil, false
	}
	objs, err := indexer.ByIndex("field:"+field, ns+"/"+value)
	if err != nil {
		return nil, false
	}
	return objs, true
}

// indexer returns the Machine informer's index: the one NewIndexedCache
// recorded, asked first because asking costs nothing (GetInformer builds a
// wrapper on every call of a cache of named namespaces, and of a term's
// cache), else the informer's own.
func (c CachedMachines) indexer(ctx context.Context) (toolscache.Indexer, bool) {
	if ix, ok := c.Cache.(Indexes); ok {
		if indexer, ok := ix.OnlyIndexer(&v1alpha1.Machine{}); ok {
			return indexer, true
		}
	}
	inf, err := c.Cache.GetInformer(ctx, &v1alpha1.Machine{})
	if err != nil {
		return nil, false
	}
	if indexed, ok := inf.(interface{ GetIndexer() toolscache.Indexer }); ok {
		return indexed.GetIndexer(), true
	}
	// A cache of named namespaces built by NewIndexedCache: GetInformer
	// has just built the informer (and waited for its first list).
	if ix, ok := c.Cache.(Indexes); ok {
		return ix.OnlyIndexer(&v1alpha1.Machine{})
	}
	return nil, false
}
