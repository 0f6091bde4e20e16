package machinesettest

import (
	"context"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// SetPhase sets a machine's phase and stamps currentStatus.lastUpdateTime, as
// the machine controller does on a phase change.
func SetPhase(ctx context.Context, c client.Client, m *v1alpha1.Machine, phase v1alpha1.MachinePhase) error {
	orig := m.DeepCopy()
	m.Status.CurrentStatus.Phase = phase
	m.Status.CurrentStatus.LastUpdateTime = metav1.Now()
	return c.Status().Patch(ctx, m, client.MergeFrom(orig))
}

// Joiner plays the machine controller for tests that do not run it: it moves
// every machine of a namespace that has no phase yet to Running once the
// machine is at least Delay old. Pause and Resume hold joins back.
type Joiner struct {
	Client    client.Client
	Namespace string
	// Delay is how old a machine must be before it joins.
	Delay time.Duration
	// Phase is the phase joined machines get; Running if empty.
	Phase v1alpha1.MachinePhase

	mu     sync.Mutex
	paused bool
}

// Pause stops joins until Resume.
func (j *Joiner) Pause() { j.mu.Lock(); j.paused = true; j.mu.Unlock() }

// Resume lets machines join again.
func (j *Joiner) Resume() { j.mu.Lock(); j.paused = false; j.mu.Unlock() }

func (j *Joiner) isPaused() bool { j.mu.Lock(); defer j.mu.Unlock(); return j.paused }

// Start runs the joiner until the test ends.
func (j *Joiner) Start(t testing.TB) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	phase := j.Phase
	if phase == "" {
		phase = v1alpha1.MachineRunning
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if j.isPaused() {
				continue
			}
			list := &v1alpha1.MachineList{}
			if err := j.Client.List(ctx, list, client.InNamespace(j.Namespace)); err != nil {
				continue
			}
			for i := range list.Items {
				m := &list.Items[i]
				if m.Status.CurrentStatus.Phase != "" || m.DeletionTimestamp != nil || time.Since(m.CreationTimestamp.Time) < j.Delay {
					continue
				}
				_ = SetPhase(ctx, j.Client, m, phase)
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}
