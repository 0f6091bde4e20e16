// Package catchup tells when the manager's informer caches have caught up
// with their API servers, so that controllers resume after an outage (or a
// lost and regained lease) only on a current view of the world.
//
// An informer that lost its API server keeps the objects it had and
// resumes its watch when the server is back; until the missed events have
// arrived it shows the world as it was before the outage. HasSynced does
// not say so: it turned true at the first list, long ago. The Tracker
// records every informer a cache creates (cache.Options.NewInformer) and,
// on Wait, takes a fresh snapshot from each informer's own ListerWatcher
// (same namespace, selectors and resource) and waits until each informer
// shows at least that snapshot.
package catchup

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
)

// poll is how often Wait compares the informers with their snapshots.
const poll = 50 * time.Millisecond

// Tracker records informers and waits for them to catch up. The zero value
// is ready for use and safe for concurrent use.
type Tracker struct {
	mu        sync.Mutex
	informers []tracked
}

type tracked struct {
	name     string // the cache's name and the object type, for errors
	lw       toolscache.ListerWatcherWithContext
	informer toolscache.SharedIndexInformer
}

// NewInformer returns a cache.Options.NewInformer for the cache called
// name ("control", "target") that builds informers as controller-runtime
// does and records them.
func (t *Tracker) NewInformer(name string) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
		inf := toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
		t.mu.Lock()
		defer t.mu.Unlock()
		t.informers = append(t.informers, tracked{
			name:     fmt.Sprintf("%s %T", name, obj),
			lw:       toolscache.ToListerWatcherWithContext(lw),
			informer: inf,
		})
		return inf
	}
}

// Len is the number of informers recorded.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.informers)
}

// Wait takes a fresh snapshot of every recorded informer's objects from
// its API server and returns once each informer shows at least its
// snapshot, or an error when a snapshot cannot be taken or timeout passes.
// A snapshot is a consistent list (resourceVersion ""), so everything
// written before Wait was called is in it.
func (t *Tracker) Wait(ctx context.Context, timeout time.Duration) error {
	t.mu.Lock()
	informers := append([]tracked(nil), t.informers...)
	t.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	pending := make([]*snapshot, 0, len(informers))
	for _, inf := range informers {
		if inf.informer.IsStopped() {
			continue
		}
		s, err := takeSnapshot(ctx, inf)
		if err != nil {
			return err
		}
		pending = append(pending, s)
	}
	err := wait.PollUntilContextCancel(ctx, poll, true, func(context.Context) (bool, error) {
		left := pending[:0]
		for _, s := range pending {
			if !s.caughtUp() {
				left = append(left, s)
			}
		}
		pending = left
		return len(pending) == 0, nil
	})
	if err != nil {
		names := make([]string, 0, len(pending))
		for _, s := range pending {
			names = append(names, s.name)
		}
		return fmt.Errorf("informers not caught up with their API server after %v: %s", timeout, strings.Join(names, ", "))
	}
	return nil
}

// snapshot is what an informer must show at least: the resource version of
// a fresh list, and the version of each object in it.
type snapshot struct {
	name     string
	informer toolscache.SharedIndexInformer
	version  string            // the list's resourceVersion
	objects  map[string]string // key to resourceVersion
}

func takeSnapshot(ctx context.Context, inf tracked) (*snapshot, error) {
	list, err := inf.lw.ListWithContext(ctx, metav1.ListOptions{ResourceVersion: ""})
	if err != nil {
		return nil, fmt.Errorf("listing for %s: %w", inf.name, err)
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("listing for %s: %w", inf.name, err)
	}
	s := &snapshot{name: inf.name, informer: inf.informer, version: listMeta.GetResourceVersion(), objects: map[string]string{}}
	err = meta.EachListItem(list, func(o runtime.Object) error {
		key, err := toolscache.MetaNamespaceKeyFunc(o)
		if err != nil {
			return err
		}
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		s.objects[key] = m.GetResourceVersion()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing for %s: %w", inf.name, err)
	}
	return s, nil
}

// caughtUp reports whether the informer shows at least the snapshot:
// either it has seen an event at or after the list's version, or every
// listed object is in its store at the listed version or newer and every
// other object in its store is newer than the list (created since).
// Resource versions are compared as Kubernetes allows since 1.35
// (resourceversion.CompareResourceVersion); a version that cannot be
// compared counts as not caught up.
func (s *snapshot) caughtUp() bool {
	if !s.informer.HasSynced() {
		return false
	}
	if newer(s.informer.LastSyncResourceVersion(), s.version, 0) {
		return true
	}
	store := s.informer.GetStore()
	for key, version := range s.objects {
		obj, ok, err := store.GetByKey(key)
		if err != nil || !ok || !newer(resourceVersionOf(obj), version, 0) {
			return false
		}
	}
	for _, key := range store.ListKeys() {
		if _, listed := s.objects[key]; listed {
			continue
		}
		obj, ok, err := store.GetByKey(key)
		if err != nil {
			return false
		}
		if ok && !newer(resourceVersionOf(obj), s.version, 1) {
			return false // gone from the API server, still in the cache
		}
	}
	return true
}

// newer reports whether version a compares to b at least as min (0: a is
// at or after b; 1: strictly after).
func newer(a, b string, min int) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c >= min
}

func resourceVersionOf(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}
