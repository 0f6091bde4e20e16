package controllertest

import (
	"context"
	"maps"
	"sort"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// MachineState is the set of machines of a namespace after one watch event.
type MachineState map[string]*v1alpha1.Machine

// Names returns the machine names, sorted.
func (s MachineState) Names() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Count returns how many machines satisfy keep.
func (s MachineState) Count(keep func(*v1alpha1.Machine) bool) int {
	n := 0
	for _, m := range s {
		if keep(m) {
			n++
		}
	}
	return n
}

// MachineObserver records every state of the machines of one namespace,
// one state per watch event, so a test can assert on all states a
// controller passed through, not only the last.
type MachineObserver struct {
	mu      sync.Mutex
	current MachineState
	states  []MachineState
}

// ObserveMachines starts a watch on the machines of namespace and records
// states until the test ends.
func ObserveMachines(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, namespace string) *MachineObserver {
	t.Helper()
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("watch client: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &MachineObserver{current: MachineState{}}
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.run(ctx, c, namespace, started)
	}()
	if err := <-started; err != nil {
		cancel()
		t.Fatalf("watching machines: %v", err)
	}
	t.Cleanup(func() { cancel(); <-done })
	return o
}

// run consumes watch events, re-opening the watch from the last seen
// resourceVersion when the server closes it.
func (o *MachineObserver) run(ctx context.Context, c client.WithWatch, namespace string, started chan<- error) {
	rv := ""
	first := true
	for ctx.Err() == nil {
		opts := []client.ListOption{client.InNamespace(namespace)}
		if rv != "" {
			opts = append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		}
		w, err := c.Watch(ctx, &v1alpha1.MachineList{}, opts...)
		if first {
			started <- err
			first = false
		}
		if err != nil {
			return
		}
		for ev := range w.ResultChan() {
			m, ok := ev.Object.(*v1alpha1.Machine)
			if !ok {
				continue
			}
			rv = m.ResourceVersion
			o.record(ev.Type, m)
		}
		w.Stop()
	}
}

func (o *MachineObserver) record(t watch.EventType, m *v1alpha1.Machine) {
	o.mu.Lock()
	defer o.mu.Unlock()
	next := maps.Clone(o.current)
	switch t {
	case watch.Added, watch.Modified:
		next[m.Name] = m.DeepCopy()
	case watch.Deleted:
		delete(next, m.Name)
	default:
		return
	}
	o.current = next
	o.states = append(o.states, next)
}

// States returns every state recorded so far, oldest first.
func (o *MachineObserver) States() []MachineState {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]MachineState(nil), o.states...)
}

// Current returns the latest state.
func (o *MachineObserver) Current() MachineState {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.current
}

// Mark returns the number of states recorded so far; StatesSince(mark)
// returns the ones recorded after it.
func (o *MachineObserver) Mark() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.states)
}

// StatesSince returns the states recorded after mark.
func (o *MachineObserver) StatesSince(mark int) []MachineState {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]MachineState(nil), o.states[mark:]...)
}
