package machineset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

func TestMachineChangeMatters(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	base := func() *v1alpha1.Machine {
		m := &v1alpha1.Machine{}
		m.Name = "m"
		m.Labels = map[string]string{"pool": "a"}
		m.Generation = 1
		m.Status.CurrentStatus.Phase = v1alpha1.MachinePending
		m.Status.LastOperation = v1alpha1.LastOperation{State: v1alpha1.MachineStateProcessing, Description: "creating"}
		return m
	}
	cases := []struct {
		name   string
		change func(*v1alpha1.Machine)
		want   bool
	}{
		{"nothing", func(*v1alpha1.Machine) {}, false},
		{"operation progress", func(m *v1alpha1.Machine) { m.Status.LastOperation.Description = "waiting for the VM" }, false},
		{"operation succeeded", func(m *v1alpha1.Machine) { m.Status.LastOperation.State = v1alpha1.MachineStateSuccessful }, false},
		{"resource version only", func(m *v1alpha1.Machine) { m.ResourceVersion = "42" }, false},
		{"phase", func(m *v1alpha1.Machine) { m.Status.CurrentStatus.Phase = v1alpha1.MachineRunning }, true},
		{"phase time", func(m *v1alpha1.Machine) { m.Status.CurrentStatus.LastUpdateTime = now }, true},
		{"preservation", func(m *v1alpha1.Machine) { m.Status.CurrentStatus.PreserveExpiryTime = &now }, true},
		{"operation failed", func(m *v1alpha1.Machine) { m.Status.LastOperation.State = v1alpha1.MachineStateFailed }, true},
		{"label", func(m *v1alpha1.Machine) { m.Labels["pool"] = "b" }, true},
		{"annotation", func(m *v1alpha1.Machine) { m.Annotations = map[string]string{v1alpha1.MachinePriorityAnnotation: "1"} }, true},
		{"owner", func(m *v1alpha1.Machine) {
			m.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineSet", Name: "s", UID: "u"}}
		}, true},
		{"spec", func(m *v1alpha1.Machine) { m.Generation = 2 }, true},
		{"deletion", func(m *v1alpha1.Machine) { m.DeletionTimestamp = &now }, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := base()
			n := o.DeepCopy()
			c.change(n)
			assert.Equal(t, c.want, machineChangeMatters(o, n))
		})
	}

	// A machine already Failed: a new description changes the set's
	// failed-machine summary.
	o := base()
	o.Status.LastOperation.State = v1alpha1.MachineStateFailed
	n := o.DeepCopy()
	n.Status.LastOperation.Description = "quota exceeded"
	assert.True(t, machineChangeMatters(o, n), "failed operation's description")
}
