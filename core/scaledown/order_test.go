package scaledown

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// TestDecide: for each key, two machines that differ first in that key;
// Decide names it, First agrees with it, and the order is the same both
// ways round. The order itself is tested where the MachineSet controller
// uses it (core/internal/controller/machineset, victims_test.go and
// FuzzPickVictims).
func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	machine := func(name string, mutate ...func(*v1alpha1.Machine)) *v1alpha1.Machine {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{
			Name: name, CreationTimestamp: metav1.NewTime(now.Add(-time.Hour)), Annotations: map[string]string{},
		}}
		m.Status.CurrentStatus.Phase = v1alpha1.MachineRunning
		for _, f := range mutate {
			f(m)
		}
		return m
	}
	annotate := func(k, v string) func(*v1alpha1.Machine) {
		return func(m *v1alpha1.Machine) { m.Annotations[k] = v }
	}
	failed := func(m *v1alpha1.Machine) { m.Status.CurrentStatus.Phase = v1alpha1.MachineFailed }
	for _, tc := range []struct {
		key         Key
		first, last *v1alpha1.Machine
	}{
		{KeyPreserved, machine("b"), machine("a", annotate(v1alpha1.PreserveAnnotation, v1alpha1.PreserveValueNow))},
		{KeyPreserved, machine("b", func(m *v1alpha1.Machine) {
			m.Status.CurrentStatus.PreserveExpiryTime = &metav1.Time{Time: now.Add(-time.Minute)} // expired
		}), machine("a", func(m *v1alpha1.Machine) {
			m.Status.CurrentStatus.PreserveExpiryTime = &metav1.Time{Time: now.Add(time.Minute)}
		})},
		{KeyPreserved, machine("b", failed, annotate(v1alpha1.PreserveAnnotation, v1alpha1.PreserveValueAutoPreserved)),
			machine("a", failed, annotate(v1alpha1.PreserveAnnotation, v1alpha1.PreserveValueWhenFailed))},
		// when-failed on a machine that has not failed preserves nothing yet.
		{KeyPreserved, machine("b", annotate(v1alpha1.PreserveAnnotation, v1alpha1.PreserveValueWhenFailed)),
			machine("a", failed, annotate(v1alpha1.PreserveAnnotation, v1alpha1.PreserveValueWhenFailed))},
		{KeyPreserved, machine("b", func(m *v1alpha1.Machine) {
			m.Status.CurrentStatus.PreserveExpiryTime = &metav1.Time{Time: now.Add(time.Minute)}
		}), machine("a", func(m *v1alpha1.Machine) {
			m.Status.CurrentStatus.PreserveExpiryTime = &metav1.Time{Time: now.Add(time.Hour)}
		})},
		{KeyPriority, machine("b", annotate(v1alpha1.MachinePriorityAnnotation, "1")), machine("a")},
		{KeyMarked, machine("b", annotate(v1alpha1.MarkedForDeletionTimeAnnotation, now.Format(time.RFC3339))), machine("a")},
		{KeyMarked, machine("b", annotate(v1alpha1.MarkedForDeletionTimeAnnotation, now.Add(-time.Minute).Format(time.RFC3339))),
			machine("a", annotate(v1alpha1.MarkedForDeletionTimeAnnotation, now.Format(time.RFC3339)))},
		{KeyPhase, machine("b", func(m *v1alpha1.Machine) { m.Status.CurrentStatus.Phase = v1alpha1.MachinePending }), machine("a")},
		{KeyPhase, machine("b", func(m *v1alpha1.Machine) { m.Status.CurrentStatus.Phase = "" }), machine("a", func(m *v1alpha1.Machine) {
			m.Status.CurrentStatus.Phase = v1alpha1.MachinePending
		})},
		{KeyAge, machine("b", func(m *v1alpha1.Machine) { m.CreationTimestamp = metav1.NewTime(now) }), machine("a")},
		{KeyName, machine("a"), machine("b")},
	} {
		key, first := Decide(tc.first, tc.last, now)
		assert.Equal(t, tc.key, key, "%s before %s", tc.first.Name, tc.last.Name)
		assert.True(t, first, "%s: %s goes first", tc.key, tc.first.Name)
		key, first = Decide(tc.last, tc.first, now)
		assert.Equal(t, tc.key, key)
		assert.False(t, first)
		assert.Equal(t, []*v1alpha1.Machine{tc.first}, Pick([]*v1alpha1.Machine{tc.last, tc.first}, 1, now))
	}
	assert.Equal(t, 3, Priority(machine("x", annotate(v1alpha1.MachinePriorityAnnotation, "not a number"))))
}
