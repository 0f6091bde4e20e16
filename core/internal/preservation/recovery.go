package preservation

import (
	"time"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// ForRecovery reports whether a Failed machine is preserved now, so that
// the health check looks at its Node again: one that is healthy again
// makes the machine Running.
func ForRecovery(m *v1alpha1.Machine, now time.Time) bool {
	exp := m.Status.CurrentStatus.PreserveExpiryTime
	return m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed && exp != nil && exp.After(now)
}
