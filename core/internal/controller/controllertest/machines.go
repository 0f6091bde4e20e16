package controllertest

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// SetMachinePhase sets a machine's phase and stamps
// currentStatus.lastUpdateTime, as the machine controller does on a phase
// change.
func SetMachinePhase(ctx context.Context, c client.Client, m *v1alpha1.Machine, phase v1alpha1.MachinePhase) error {
	orig := m.DeepCopy()
	m.Status.CurrentStatus.Phase = phase
	m.Status.CurrentStatus.LastUpdateTime = metav1.Now()
	return c.Status().Patch(ctx, m, client.MergeFrom(orig))
}

// LabelJoinedBy marks the Nodes a Joiner created, with its namespace as value.
const LabelJoinedBy = "controllertest.machina.io/joined-by"

// Joiner plays the machine controller and the kubelet for tests that run
// neither: every machine of a namespace that has no phase yet and is at least
// Delay old joins. With Nodes set, joining creates a Node named after the
// machine and labels the machine node=<name>, and Nodes of machines that are
// gone are deleted; then the machine becomes Running. Pause and Resume hold
// joins back.
type Joiner struct {
	Client    client.Client
	Namespace string
	// Nodes is a client of the target cluster; nil means no Nodes.
	Nodes client.Client
	// Delay is how old a machine must be before it joins.
	Delay time.Duration

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
	go func() {
		defer close(done)
		tick := time.NewTicker(Tick)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			j.round(ctx)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func (j *Joiner) round(ctx context.Context) {
	list := &v1alpha1.MachineList{}
	if err := j.Client.List(ctx, list, client.InNamespace(j.Namespace)); err != nil {
		return
	}
	alive := map[string]bool{}
	for i := range list.Items {
		m := &list.Items[i]
		alive[m.Name] = true
		if j.isPaused() || m.Status.CurrentStatus.Phase != "" || m.DeletionTimestamp != nil || time.Since(m.CreationTimestamp.Time) < j.Delay {
			continue
		}
		if j.Nodes != nil {
			if err := j.join(ctx, m); err != nil {
				continue
			}
		}
		_ = SetMachinePhase(ctx, j.Client, m, v1alpha1.MachineRunning)
	}
	if j.Nodes == nil {
		return
	}
	nodes := &corev1.NodeList{}
	if err := j.Nodes.List(ctx, nodes, client.MatchingLabels{LabelJoinedBy: j.Namespace}); err != nil {
		return
	}
	for i := range nodes.Items {
		if !alive[nodes.Items[i].Name] {
			_ = j.Nodes.Delete(ctx, &nodes.Items[i])
		}
	}
}

// join creates the machine's Node and sets the machine's node label.
func (j *Joiner) join(ctx context.Context, m *v1alpha1.Machine) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Labels: map[string]string{LabelJoinedBy: j.Namespace}}}
	if err := j.Nodes.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	orig := m.DeepCopy()
	if m.Labels == nil {
		m.Labels = map[string]string{}
	}
	m.Labels["node"] = m.Name
	return j.Client.Patch(ctx, m, client.MergeFrom(orig))
}
