package preservation

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// Only a Failed machine whose preservation has not expired is preserved for
// recovery.
func TestForRecovery(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := func(phase v1alpha1.MachinePhase, expiry *time.Time) *v1alpha1.Machine {
		m := &v1alpha1.Machine{}
		m.Status.CurrentStatus.Phase = phase
		if expiry != nil {
			t := metav1.NewTime(*expiry)
			m.Status.CurrentStatus.PreserveExpiryTime = &t
		}
		return m
	}
	later, earlier := now.Add(time.Minute), now.Add(-time.Minute)
	assert.True(t, ForRecovery(m(v1alpha1.MachineFailed, &later), now))
	assert.False(t, ForRecovery(m(v1alpha1.MachineFailed, &now), now), "expires now")
	assert.False(t, ForRecovery(m(v1alpha1.MachineFailed, &earlier), now))
	assert.False(t, ForRecovery(m(v1alpha1.MachineFailed, nil), now), "not preserved")
	assert.False(t, ForRecovery(m(v1alpha1.MachineRunning, &later), now), "not Failed")
}
