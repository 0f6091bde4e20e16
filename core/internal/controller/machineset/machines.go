package machineset

import (
	"time"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/scaledown"
)

// isTerminating reports whether a machine is on its way out: its deletion was
// requested, or the machine controller already set the Terminating phase. A
// terminating machine no longer counts towards the set's replicas, so that a
// replacement is created while the old one drains (as Kubernetes does for
// terminating pods and MCM for Terminating machines).
func isTerminating(m *v1alpha1.Machine) bool {
	return m.DeletionTimestamp != nil || m.Status.CurrentStatus.Phase == v1alpha1.MachineTerminating
}

// isFailed reports whether the machine controller gave up on the machine; the
// set replaces such a machine unless it is preserved.
func isFailed(m *v1alpha1.Machine) bool {
	return m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed
}

// isReady reports whether the machine serves: Running (its node joined and is
// healthy) or Available (the phase a machine reaches when the controller runs
// without a target cluster, where no node ever joins).
func isReady(m *v1alpha1.Machine) bool {
	switch m.Status.CurrentStatus.Phase {
	case v1alpha1.MachineRunning, v1alpha1.MachineAvailable:
		return true
	}
	return false
}

// readySince is when the machine last entered its ready phase. The machine
// controller stamps currentStatus.lastUpdateTime on every phase change; a
// ready machine without the stamp counts as ready since its creation.
func readySince(m *v1alpha1.Machine) time.Time {
	if t := m.Status.CurrentStatus.LastUpdateTime.Time; !t.IsZero() {
		return t
	}
	return m.CreationTimestamp.Time
}

// availableAt reports whether the machine is available at now (ready for at
// least minReadySeconds) and, if it is ready but not yet available, how long
// until it will be.
func availableAt(m *v1alpha1.Machine, minReadySeconds int32, now time.Time) (available bool, wait time.Duration) {
	if !isReady(m) {
		return false, 0
	}
	if minReadySeconds <= 0 {
		return true, 0
	}
	due := readySince(m).Add(time.Duration(minReadySeconds) * time.Second)
	if !now.Before(due) {
		return true, 0
	}
	return false, due.Sub(now)
}

// isPreserved reports whether the machine is preserved (scaledown.Preserved:
// its preservation expiry lies in the future, or its preserve annotation
// asks for it and the machine controller has not yet stamped an expiry).
// Preserved machines are deleted last on scale-down and a Failed preserved
// machine is not replaced.
func isPreserved(m *v1alpha1.Machine, now time.Time) bool { return scaledown.Preserved(m, now) }
