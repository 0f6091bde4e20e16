package chaos

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// failedWatch records every machine that enters the Failed phase, from a
// watch on all Machines, so that a machine that failed and was replaced
// between two censuses is still counted. The watch is re-established after
// an API server outage; a machine that was Failed only while the API server
// was down cannot have been written as Failed, so nothing is missed.
type failedWatch struct {
	mu sync.Mutex
	// seen maps namespace/name of a machine to when it was first seen
	// Failed.
	seen map[string]time.Time
}

func watchFailed(ctx context.Context, c client.WithWatch) *failedWatch {
	w := &failedWatch{seen: map[string]time.Time{}}
	go w.run(ctx, c)
	return w
}

func (w *failedWatch) run(ctx context.Context, c client.WithWatch) {
	for ctx.Err() == nil {
		var list v1alpha1.MachineList
		if err := c.List(ctx, &list); err != nil {
			sleepCtx(ctx, time.Second)
			continue
		}
		for i := range list.Items {
			w.note(&list.Items[i])
		}
		wi, err := c.Watch(ctx, &v1alpha1.MachineList{})
		if err != nil {
			sleepCtx(ctx, time.Second)
			continue
		}
		for ev := range wi.ResultChan() {
			if m, ok := ev.Object.(*v1alpha1.Machine); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				w.note(m)
			}
		}
		wi.Stop()
	}
}

func (w *failedWatch) note(m *v1alpha1.Machine) {
	if m.Status.CurrentStatus.Phase != v1alpha1.MachineFailed {
		return
	}
	key := m.Namespace + "/" + m.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.seen[key]; !ok {
		w.seen[key] = time.Now()
	}
}

// since returns the machines of namespace first seen Failed at or after t.
func (w *failedWatch) since(namespace string, t time.Time) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for key, at := range w.seen {
		if !at.Before(t) && len(key) > len(namespace) && key[:len(namespace)+1] == namespace+"/" {
			out = append(out, key)
		}
	}
	return out
}

// sleepCtx waits for d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
