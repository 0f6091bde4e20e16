package manager

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/machina-io/machina/core/internal/controller/setup"
)

// term is one leadership term: the controllers and safety checks that only
// the leader runs, built for the term and stopped with it.
//
// A controller-runtime controller runs once; a replica that loses its
// lease and wins it back needs new ones. setupControllers builds them on a
// term as on a controller-runtime manager: the term hands out the
// process's manager (its caches, clients and servers live as long as the
// process, in every replica), but keeps every runnable added to it, and
// run starts them and returns once all of them have stopped. The event
// handlers the term's watches put on the shared informers are removed
// then, and the field indexes they declare are added to the caches once
// per process.
type term struct {
	ctrl.Manager // the process's manager
	// skipNameValidation lets a later term's controllers take the names
	// the first term's controllers registered.
	skipNameValidation bool
	indexes            *fieldIndexes

	mu        sync.Mutex
	runnables []manager.Runnable
	handlers  []handlerRegistration
	started   bool
}

// handlerRegistration is an event handler a term's watch added to an
// informer.
type handlerRegistration struct {
	informer cache.Informer
	reg      toolscache.ResourceEventHandlerRegistration
}

func newTerm(mgr ctrl.Manager, indexes *fieldIndexes, skipNameValidation bool) *term {
	return &term{Manager: mgr, indexes: indexes, skipNameValidation: skipNameValidation}
}

// Add keeps r for run. Everything setupControllers adds is leader work.
func (t *term) Add(r manager.Runnable) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started {
		return errors.New("leadership term: runnable added after the term started")
	}
	t.runnables = append(t.runnables, r)
	return nil
}

// GetControllerOptions are the manager's, with name validation off after
// the first term.
func (t *term) GetControllerOptions() config.Controller {
	o := t.Manager.GetControllerOptions()
	if t.skipNameValidation {
		skip := true
		o.SkipNameValidation = &skip
	}
	return o
}

// GetFieldIndexer adds each index to the process's cache once.
func (t *term) GetFieldIndexer() client.FieldIndexer {
	return t.indexes.on(t.Manager.GetFieldIndexer())
}

// GetCache is the process's cache; the event handlers of the informers it
// hands out are the term's.
func (t *term) GetCache() cache.Cache {
	return &termCache{Cache: t.Manager.GetCache(), term: t}
}

// cluster wraps another cluster (the target) the same way.
func (t *term) cluster(c cluster.Cluster) cluster.Cluster {
	if c == nil {
		return nil
	}
	return &termCluster{Cluster: c, term: t}
}

// run starts every runnable of the term with ctx and returns once all have
// stopped: when ctx ends (the lease is lost or the process stops) or when
// one of them fails, which ends the term. It then removes the term's event
// handlers from the informers.
func (t *term) run(ctx context.Context) error {
	t.mu.Lock()
	t.started = true
	runnables := append([]manager.Runnable(nil), t.runnables...)
	t.mu.Unlock()

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, r := range runnables {
		wg.Go(func() {
			if err := r.Start(ctx); err != nil {
				cancel(fmt.Errorf("%T: %w", r, err))
			}
		})
	}
	<-ctx.Done()
	wg.Wait()
	t.removeHandlers()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (t *term) remember(i cache.Informer, reg toolscache.ResourceEventHandlerRegistration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.handlers = append(t.handlers, handlerRegistration{informer: i, reg: reg})
}

func (t *term) removeHandlers() {
	t.mu.Lock()
	handlers := t.handlers
	t.handlers = nil
	t.mu.Unlock()
	for _, h := range handlers {
		// An informer that has stopped has dropped its handlers already.
		_ = h.informer.RemoveEventHandler(h.reg)
	}
}

// termCache is the process's cache with informers whose new event
// handlers belong to the term.
type termCache struct {
	cache.Cache
	term *term
}

func (c *termCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return &termInformer{Informer: i, term: c.term}, nil
}

func (c *termCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	i, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return &termInformer{Informer: i, term: c.term}, nil
}

// OnlyIndexer passes on the process cache's index of its one informer of
// obj's type (setup.Indexes), which setup.CachedMachines reads: the term's
// informers, wrappers, do not expose theirs.
func (c *termCache) OnlyIndexer(obj runtime.Object) (toolscache.Indexer, bool) {
	if ix, ok := c.Cache.(setup.Indexes); ok {
		return ix.OnlyIndexer(obj)
	}
	return nil, false
}

// termInformer records the event handlers added to it.
type termInformer struct {
	cache.Informer
	term *term
}

func (i *termInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.record(i.Informer.AddEventHandler(h))
}

func (i *termInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.record(i.Informer.AddEventHandlerWithResyncPeriod(h, resync))
}

func (i *termInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.record(i.Informer.AddEventHandlerWithOptions(h, o))
}

func (i *termInformer) record(reg toolscache.ResourceEventHandlerRegistration, err error) (toolscache.ResourceEventHandlerRegistration, error) {
	if err == nil {
		i.term.remember(i.Informer, reg)
	}
	return reg, err
}

// termCluster is another cluster whose cache's event handlers belong to
// the term.
type termCluster struct {
	cluster.Cluster
	term *term
}

func (c *termCluster) GetCache() cache.Cache {
	return &termCache{Cache: c.Cluster.GetCache(), term: c.term}
}

// fieldIndexes remembers, for the life of the process, which field indexes
// the caches have: an informer refuses a second index of the same name.
type fieldIndexes struct {
	mu   sync.Mutex
	done map[string]bool
}

func (f *fieldIndexes) on(indexer client.FieldIndexer) client.FieldIndexer {
	return &onceIndexer{FieldIndexer: indexer, indexes: f}
}

type onceIndexer struct {
	client.FieldIndexer
	indexes *fieldIndexes
}

func (o *onceIndexer) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	key := fmt.Sprintf("%T/%s", obj, field)
	o.indexes.mu.Lock()
	defer o.indexes.mu.Unlock()
	if o.indexes.done[key] {
		return nil
	}
	if err := o.FieldIndexer.IndexField(ctx, obj, field, extract); err != nil {
		return err
	}
	if o.indexes.done == nil {
		o.indexes.done = map[string]bool{}
	}
	o.indexes.done[key] = true
	return nil
}
