package inplace

import (
	"time"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// DefaultTimeout is how long an in-place update may take from the moment
// the node was told to update (the machine entered InPlaceUpdating), as
// MCM's --machine-inplace-update-timeout.
const DefaultTimeout = 20 * time.Minute

// Timeout is the machine's in-place update timeout: its
// machineConfiguration.inPlaceUpdateTimeout when set, else def.
func Timeout(m *v1alpha1.Machine, def time.Duration) time.Duration {
	if c := m.Spec.MachineConfiguration; c != nil && c.MachineInPlaceUpdateTimeout != nil && c.MachineInPlaceUpdateTimeout.Duration > 0 {
		return c.MachineInPlaceUpdateTimeout.Duration
	}
	return def
}

// Expired tells whether timeout has passed since since, and otherwise how
// long is left (for a requeue).
func Expired(since time.Time, timeout time.Duration, now time.Time) (bool, time.Duration) {
	left := since.Add(timeout).Sub(now)
	return left <= 0, max(left, 0)
}

// PhaseSince is when the machine entered its current phase (the
// phase's lastUpdateTime, which moves only when the phase changes).
func PhaseSince(m *v1alpha1.Machine) time.Time {
	return m.Status.CurrentStatus.LastUpdateTime.Time
}
