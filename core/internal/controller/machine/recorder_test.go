package machine

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// recorder watches the Machines of a namespace and remembers every phase,
// deletion step and lastOperation error code each one showed, in order
// (consecutive repeats collapsed), so that tests assert on the path a
// machine took, not only on where it ended.
type recorder struct {
	mu     sync.Mutex
	phases map[string][]string
	steps  map[string][]string
	codes  map[string][]string
	writes map[string]int
	gone   map[string]bool
	// ended says why watches ended before the test did.
	ended []string
}

// follow records the events of wi until it ends and returns the resource
// version to go on from.
func (r *recorder) follow(ctx context.Context, wi watch.Interface, rv string) string {
	for {
		select {
		case <-ctx.Done():
			return rv
		case ev, ok := <-wi.ResultChan():
			if !ok {
				r.note("watch closed at " + rv)
				return rv
			}
			if ev.Type == watch.Error {
				err := apierrors.FromObject(ev.Object)
				r.note(fmt.Sprintf("watch error at %s: %v", rv, err))
				if apierrors.IsGone(err) || apierrors.IsResourceExpired(err) {
					// Too old to go on from: start again from now
					// (every machine comes again as added; repeats of a
					// phase collapse).
					return ""
				}
				return rv
			}
			m, ok := ev.Object.(*v1alpha1.Machine)
			if !ok {
				continue
			}
			rv = m.ResourceVersion
			if ev.Type == watch.Bookmark {
				continue
			}
			r.observe(m)
			if ev.Type == watch.Deleted {
				r.mu.Lock()
				r.gone[m.Name] = true
				r.mu.Unlock()
			}
		}
	}
}

func (r *recorder) note(why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = append(r.ended, why)
}

// watchEnds says why the recorder's watches ended, for a failure message.
func (r *recorder) watchEnds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ended)
}

func startRecorder(t *testing.T, ctx context.Context, env *testenv.Env, ns string) *recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("recorder: %v", err)
	}
	list := &v1alpha1.MachineList{}
	if err := wc.List(ctx, list, client.InNamespace(ns)); err != nil {
		cancel()
		t.Fatalf("recorder: list: %v", err)
	}
	r := &recorder{phases: map[string][]string{}, steps: map[string][]string{}, codes: map[string][]string{}, writes: map[string]int{}, gone: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A watch the API server ends (its request timeout, a decode
		// error, a restart) is opened again from the last version seen,
		// so no event is missed and none is seen twice; why it ended is
		// kept for a failure message.
		rv := list.ResourceVersion
		for ctx.Err() == nil {
			wi, err := wc.Watch(ctx, &v1alpha1.MachineList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
			if err != nil {
				r.note(fmt.Sprintf("watch from %s: %v", rv, err))
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
				continue
			}
			rv = r.follow(ctx, wi, rv)
			wi.Stop()
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

func appendChange(list []string, v string) []string {
	if len(list) > 0 && list[len(list)-1] == v {
		return list
	}
	return append(list, v)
}

func (r *recorder) observe(m *v1alpha1.Machine) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes[m.Name]++
	r.phases[m.Name] = appendChange(r.phases[m.Name], string(m.Status.CurrentStatus.Phase))
	if s := string(m.Status.DeletionStep); s != "" {
		r.steps[m.Name] = appendChange(r.steps[m.Name], s)
	}
	if c := m.Status.LastOperation.ErrorCode; c != "" {
		r.codes[m.Name] = appendChange(r.codes[m.Name], c)
	}
}

// writesOf counts the watch events of a machine: every write to it.
func (r *recorder) writesOf(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes[name]
}

// deleted tells whether the watch saw the machine disappear.
func (r *recorder) deleted(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gone[name]
}

func (r *recorder) phasesOf(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.phases[name])
}

func (r *recorder) stepsOf(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.steps[name])
}

func (r *recorder) codesOf(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.codes[name])
}

// everPhase tells whether any machine of the namespace was ever seen in
// phase.
func (r *recorder) everPhase(phase v1alpha1.MachinePhase) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var who []string
	for name, ps := range r.phases {
		if slices.Contains(ps, string(phase)) {
			who = append(who, name)
		}
	}
	return who
}

func (r *recorder) history(name string) string {
	return fmt.Sprintf("phases %q, steps %q, error codes %q", r.phasesOf(name), r.stepsOf(name), r.codesOf(name))
}

// assertStepsFollow checks the deletion steps stored for machine name
// against the flow: they come in the flow's order, none twice (no step goes
// back), and every step in waited, where the deletion had to wait, is
// among them. A step that finishes at once hands over to the next in the
// same reconcile and is never stored (reconcileDelete), so what a deletion
// did is asserted on its effects (driver calls, Nodes, pods), and the
// stored steps only say where it waited and that it never went back.
//
// The machine must be gone: the recorder has then seen every step it had.
func (r *recorder) assertStepsFollow(t *testing.T, name string, flow []string, waited ...string) {
	t.Helper()
	for deadline := time.Now().Add(waitLong); !r.deleted(name); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Errorf("%s: the recorder never saw the machine deleted", name)
			return
		}
	}
	got := r.stepsOf(name)
	i := 0
	for _, step := range got {
		at := slices.Index(flow[i:], step)
		if at < 0 {
			t.Errorf("%s: stored deletion steps %q do not follow the flow %q", name, got, flow)
			return
		}
		i += at + 1
	}
	for _, step := range waited {
		if !slices.Contains(got, step) {
			t.Errorf("%s: stored deletion steps %q lack %s, where the deletion waited", name, got, step)
		}
	}
}

// assertPhases waits until the phases recorded for machine name are want
// (after withoutLeadingEmpty): a test reads a machine's phase from the API
// server, and the recorder's watch may show it a moment later.
func (r *recorder) assertPhases(t *testing.T, name string, want []string) {
	t.Helper()
	deadline := time.Now().Add(waitLong)
	for {
		got := withoutLeadingEmpty(r.phasesOf(name))
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: recorded phases %q, want %q", name, got, want)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
