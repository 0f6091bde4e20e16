package machineset

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type machineOpt func(*v1alpha1.Machine)

func inPhase(p v1alpha1.MachinePhase) machineOpt {
	return func(m *v1alpha1.Machine) { m.Status.CurrentStatus.Phase = p }
}

func priority(p string) machineOpt {
	return func(m *v1alpha1.Machine) { m.Annotations[v1alpha1.MachinePriorityAnnotation] = p }
}

func marked(at time.Time) machineOpt {
	return func(m *v1alpha1.Machine) {
		m.Annotations[v1alpha1.MarkedForDeletionTimeAnnotation] = at.Format(time.RFC3339)
	}
}

func created(at time.Time) machineOpt {
	return func(m *v1alpha1.Machine) { m.CreationTimestamp = metav1.NewTime(at) }
}

func preservedUntil(at time.Time) machineOpt {
	return func(m *v1alpha1.Machine) {
		ts := metav1.NewTime(at)
		m.Status.CurrentStatus.PreserveExpiryTime = &ts
	}
}

func machine(name string, opts ...machineOpt) *v1alpha1.Machine {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}, CreationTimestamp: metav1.NewTime(t0)}}
	m.Status.CurrentStatus.Phase = v1alpha1.MachineRunning
	for _, o := range opts {
		o(m)
	}
	return m
}

func names(ms []*v1alpha1.Machine) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

func TestSortForDeletionPhaseOrder(t *testing.T) {
	machines := []*v1alpha1.Machine{
		machine("running", inPhase(v1alpha1.MachineRunning)),
		machine("available", inPhase(v1alpha1.MachineAvailable)),
		machine("pending", inPhase(v1alpha1.MachinePending)),
		machine("creating", inPhase("")),
		machine("unknown", inPhase(v1alpha1.MachineUnknown)),
		machine("crashloop", inPhase(v1alpha1.MachineCrashLoopBackOff)),
		machine("failed", inPhase(v1alpha1.MachineFailed)),
		machine("terminating", inPhase(v1alpha1.MachineTerminating)),
	}
	sortForDeletion(machines, t0)
	assert.Equal(t, []string{"terminating", "failed", "crashloop", "unknown", "creating", "pending", "available", "running"}, names(machines))
}

func TestSortForDeletionKeysInOrder(t *testing.T) {
	machines := []*v1alpha1.Machine{
		// Priority beats everything below it, even phase and a deletion mark.
		machine("prio3-failed", inPhase(v1alpha1.MachineFailed)),
		machine("prio1-running", priority("1")),
		// Among equal priority, a mark beats phase; the earlier mark goes first.
		machine("prio2-marked-late", priority("2"), marked(t0.Add(2*time.Minute))),
		machine("prio2-marked-early", priority("2"), marked(t0.Add(time.Minute))),
		machine("prio2-pending", priority("2"), inPhase(v1alpha1.MachinePending)),
		// Equal priority, no mark, same phase: newer first.
		machine("prio3-old", created(t0)),
		machine("prio3-new", created(t0.Add(time.Hour))),
		// Garbage priority means the default, 3.
		machine("garbage-prio-unknown", priority("high"), inPhase(v1alpha1.MachineUnknown)),
	}
	sortForDeletion(machines, t0)
	assert.Equal(t, []string{
		"prio1-running",
		"prio2-marked-early", "prio2-marked-late", "prio2-pending",
		"prio3-failed", "garbage-prio-unknown", "prio3-new", "prio3-old",
	}, names(machines))
}

func TestSortForDeletionPreservedLast(t *testing.T) {
	machines := []*v1alpha1.Machine{
		machine("preserved-prio1", priority("1"), preservedUntil(t0.Add(time.Hour))),
		machine("expired-preservation", preservedUntil(t0.Add(-time.Hour))),
		machine("plain"),
	}
	sortForDeletion(machines, t0)
	assert.Equal(t, []string{"expired-preservation", "plain", "preserved-prio1"}, names(machines))
}

func TestPickVictimsTakesLowestPriorityAndKeepsInput(t *testing.T) {
	in := []*v1alpha1.Machine{machine("a"), machine("b", priority("1")), machine("c"), machine("d", priority("2"))}
	got := pickVictims(in, 2, t0)
	assert.Equal(t, []string{"b", "d"}, names(got))
	assert.Equal(t, []string{"a", "b", "c", "d"}, names(in), "input order unchanged")
	assert.Empty(t, pickVictims(in, 0, t0))
	assert.Len(t, pickVictims(in, 10, t0), 4)
}

func TestComputePlan(t *testing.T) {
	set := func(replicas int32, labels map[string]string) *v1alpha1.MachineSet {
		return &v1alpha1.MachineSet{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: v1alpha1.MachineSetSpec{Replicas: replicas}}
	}
	deleting := func(m *v1alpha1.Machine) { ts := metav1.NewTime(t0); m.DeletionTimestamp = &ts }

	t.Run("scale up counts terminating machines as gone", func(t *testing.T) {
		p := computePlan(set(3, nil), []*v1alpha1.Machine{machine("a"), machine("b", deleting)}, t0)
		assert.Equal(t, 2, p.create)
		assert.Empty(t, p.deletions())
	})
	t.Run("scale down picks victims in deletion order", func(t *testing.T) {
		p := computePlan(set(1, nil), []*v1alpha1.Machine{machine("a"), machine("b", inPhase(v1alpha1.MachinePending)), machine("c", priority("1"))}, t0)
		assert.Equal(t, []string{"c", "b"}, names(p.scaleDown))
		assert.Zero(t, p.create)
	})
	t.Run("failed machines are replaced in the same sync", func(t *testing.T) {
		p := computePlan(set(2, nil), []*v1alpha1.Machine{machine("a"), machine("f", inPhase(v1alpha1.MachineFailed))}, t0)
		assert.Equal(t, []string{"f"}, names(p.replace))
		assert.Equal(t, 1, p.create)
	})
	t.Run("preserved failed machine is kept and replaced", func(t *testing.T) {
		p := computePlan(set(2, nil), []*v1alpha1.Machine{machine("a"), machine("f", inPhase(v1alpha1.MachineFailed), preservedUntil(t0.Add(time.Hour)))}, t0)
		assert.Empty(t, p.deletions(), "the preserved machine is not deleted")
		assert.Equal(t, 1, p.create, "a machine is created in its place")
	})
	t.Run("preserved failed machine is never a scale-down victim", func(t *testing.T) {
		p := computePlan(set(1, nil), []*v1alpha1.Machine{machine("a"), machine("b"), machine("f", inPhase(v1alpha1.MachineFailed), preservedUntil(t0.Add(time.Hour)))}, t0)
		assert.Len(t, p.scaleDown, 1)
		assert.NotEqual(t, "f", p.scaleDown[0].Name)
	})
	t.Run("failed machine whose preservation expired is replaced", func(t *testing.T) {
		p := computePlan(set(2, nil), []*v1alpha1.Machine{machine("a"), machine("b"), machine("f", inPhase(v1alpha1.MachineFailed), preservedUntil(t0.Add(-time.Second)))}, t0)
		assert.Equal(t, []string{"f"}, names(p.replace))
		assert.Zero(t, p.create)
	})
	t.Run("frozen set creates nothing but still deletes", func(t *testing.T) {
		frozen := map[string]string{v1alpha1.FreezeLabel: "True"}
		p := computePlan(set(3, frozen), []*v1alpha1.Machine{machine("a")}, t0)
		assert.Zero(t, p.create)
		assert.True(t, p.frozen)
		p = computePlan(set(1, frozen), []*v1alpha1.Machine{machine("a"), machine("b")}, t0)
		assert.Len(t, p.scaleDown, 1)
	})
	t.Run("scale-up-disabled set creates nothing but still deletes and replaces", func(t *testing.T) {
		disabled := map[string]string{v1alpha1.LabelKeyMachineSetScaleUpDisabled: "true"}
		p := computePlan(set(3, disabled), []*v1alpha1.Machine{machine("a"), machine("f", inPhase(v1alpha1.MachineFailed))}, t0)
		assert.Zero(t, p.create)
		assert.Equal(t, []string{"f"}, names(p.replace))
		p = computePlan(set(1, disabled), []*v1alpha1.Machine{machine("a"), machine("b")}, t0)
		assert.Len(t, p.scaleDown, 1)
	})
	t.Run("a machine just moved in place is not surplus", func(t *testing.T) {
		moved := func(m *v1alpha1.Machine) {
			m.Labels = map[string]string{v1alpha1.LabelKeyNodeUpdateResult: v1alpha1.LabelValueNodeUpdateSuccessful}
		}
		// Moved before the set grew to include it.
		p := computePlan(set(1, nil), []*v1alpha1.Machine{machine("a"), machine("m", moved)}, t0)
		assert.True(t, p.empty(), "%+v", p)
		// A scale-down takes unmarked machines only, and no more than the
		// surplus.
		p = computePlan(set(1, nil), []*v1alpha1.Machine{machine("a"), machine("b"), machine("m", moved)}, t0)
		assert.Len(t, p.scaleDown, 1)
		assert.NotContains(t, names(p.scaleDown), "m")
		// Counted as present: no machine is created for it.
		p = computePlan(set(2, nil), []*v1alpha1.Machine{machine("a"), machine("m", moved)}, t0)
		assert.True(t, p.empty(), "%+v", p)
	})
	t.Run("no per-sync cap on creations and deletions", func(t *testing.T) {
		// executePlan bounds the requests in flight instead.
		p := computePlan(set(1000, nil), nil, t0)
		assert.Equal(t, 1000, p.create)
		var many []*v1alpha1.Machine
		for i := range 150 {
			many = append(many, machine(string(rune('A'+i%26))+string(rune('a'+i/26))))
		}
		p = computePlan(set(0, nil), many, t0)
		assert.Len(t, p.scaleDown, 150)
	})
}

func TestSlowStartBatch(t *testing.T) {
	t.Run("all succeed", func(t *testing.T) {
		calls := 0
		n, err := slowStartBatch(10, 100, func(int) error { calls++; return nil })
		require.NoError(t, err)
		assert.Equal(t, 10, n)
		assert.Equal(t, 10, calls)
	})
	t.Run("batches grow to the limit, in order", func(t *testing.T) {
		// Every call of a batch waits for the whole batch to be in flight,
		// so the test sees each batch's size; it fails (deadline) if a
		// batch were smaller than the slow start says, and the maximum
		// shows if one were larger.
		const count, limit = 1000, 100
		var (
			mu        sync.Mutex
			inFlight  int
			maxFlight int
			batches   []int
			started   int
			outOfTurn []int
		)
		want := []int{1, 2, 4, 8, 16, 32, 64}
		for rest := count - 127; rest > 0; rest -= limit {
			want = append(want, min(rest, limit))
		}
		sizeOf := func(i int) int {
			for _, b := range want {
				if i < b {
					return b
				}
				i -= b
			}
			return 0
		}
		barrier := map[int]chan struct{}{}
		first := 0
		for _, b := range want {
			barrier[first] = make(chan struct{})
			first += b
		}
		batchStart := func(i int) int {
			s := 0
			for _, b := range want {
				if i < s+b {
					return s
				}
				s += b
			}
			return -1
		}
		n, err := slowStartBatch(count, limit, func(i int) error {
			mu.Lock()
			// Call i belongs to the batch running now.
			if started < batchStart(i) || started >= batchStart(i)+sizeOf(i) {
				outOfTurn = append(outOfTurn, i)
			}
			started++
			inFlight++
			maxFlight = max(maxFlight, inFlight)
			if inFlight == sizeOf(i) {
				batches = append(batches, inFlight)
				close(barrier[batchStart(i)])
			}
			mu.Unlock()
			select {
			case <-barrier[batchStart(i)]:
			case <-time.After(10 * time.Second):
				return fmt.Errorf("call %d: its batch never filled", i)
			}
			mu.Lock()
			inFlight--
			mu.Unlock()
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, count, n)
		assert.Equal(t, want, batches)
		assert.Equal(t, limit, maxFlight)
		assert.Empty(t, outOfTurn, "calls started outside their batch")
	})
	t.Run("stops after the batch with the first failure", func(t *testing.T) {
		// Batches are 1, 2, 4, 8: failing from the 4th call on means the
		// batch of 4 (calls 4..7) fails and no batch of 8 starts.
		var calls int32
		var mu = make(chan struct{}, 1)
		n, err := slowStartBatch(100, 100, func(int) error {
			mu <- struct{}{}
			calls++
			c := calls
			<-mu
			if c >= 4 {
				return assert.AnError
			}
			return nil
		})
		require.ErrorIs(t, err, assert.AnError)
		assert.Equal(t, 3, n)
		assert.Equal(t, int32(7), calls)
	})
	t.Run("zero", func(t *testing.T) {
		n, err := slowStartBatch(0, 100, func(int) error { t.Fatal("called"); return nil })
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

func TestAvailableAt(t *testing.T) {
	m := machine("a")
	m.Status.CurrentStatus.LastUpdateTime = metav1.NewTime(t0)
	ok, wait := availableAt(m, 10, t0.Add(4*time.Second))
	assert.False(t, ok)
	assert.Equal(t, 6*time.Second, wait)
	ok, _ = availableAt(m, 10, t0.Add(10*time.Second))
	assert.True(t, ok)
	ok, _ = availableAt(machine("p", inPhase(v1alpha1.MachinePending)), 0, t0)
	assert.False(t, ok)
}

func TestNewMachineName(t *testing.T) {
	n := newMachineName("workers")
	assert.Regexp(t, `^workers-[a-z0-9]{5}$`, n)
	long := newMachineName(string(make([]byte, 300)))
	assert.Len(t, long, 253)
}
