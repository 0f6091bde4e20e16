package meltdown

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func TestInProgress(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	later := metav1.NewTime(now.Add(time.Hour))
	earlier := metav1.NewTime(now.Add(-time.Hour))
	deleting := metav1.NewTime(now.Add(-time.Minute))
	m := func(name string, phase v1alpha1.MachinePhase, mod func(*v1alpha1.Machine)) v1alpha1.Machine {
		mc := v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name}}
		mc.Status.CurrentStatus.Phase = phase
		if mod != nil {
			mod(&mc)
		}
		return mc
	}
	machines := []v1alpha1.Machine{
		m("running", v1alpha1.MachineRunning, nil),
		m("unknown", v1alpha1.MachineUnknown, nil),
		m("available", v1alpha1.MachineAvailable, nil),
		m("failed", v1alpha1.MachineFailed, nil),
		m("failed-preserved", v1alpha1.MachineFailed, func(mc *v1alpha1.Machine) { mc.Status.CurrentStatus.PreserveExpiryTime = &later }),
		m("failed-preservation-over", v1alpha1.MachineFailed, func(mc *v1alpha1.Machine) { mc.Status.CurrentStatus.PreserveExpiryTime = &earlier }),
		m("terminating", v1alpha1.MachineTerminating, nil),
		m("running-deleted", v1alpha1.MachineRunning, func(mc *v1alpha1.Machine) { mc.DeletionTimestamp = &deleting }),
		m("pending", v1alpha1.MachinePending, nil),
		m("creating", "", nil),
		m("crashloop", v1alpha1.MachineCrashLoopBackOff, nil),
		m("inplace", v1alpha1.MachineInPlaceUpdating, nil),
	}
	assert.Equal(t, []string{
		"failed", "failed-preservation-over", "terminating", "running-deleted",
		"pending", "creating", "crashloop", "inplace",
	}, inProgress(machines, now))
	assert.Empty(t, inProgress(nil, now))
}
