package healthcheck

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
)

func TestShortCircuit(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int32) *intstr.IntOrString { v := intstr.FromInt32(n); return &v }
	for _, tc := range []struct {
		name                string
		spec                machinaio.MachineHealthCheckSpec
		expected, unhealthy int
		allowed             bool
		remaining           int
	}{
		{"default is 100%", machinaio.MachineHealthCheckSpec{}, 5, 5, true, 0},
		{"40% of 5 rounds down to 2: 3 is too many", machinaio.MachineHealthCheckSpec{MaxUnhealthy: pct("40%")}, 5, 3, false, 0},
		{"40% of 5: 2 is allowed", machinaio.MachineHealthCheckSpec{MaxUnhealthy: pct("40%")}, 5, 2, true, 0},
		{"40% of 5: 1 leaves 1", machinaio.MachineHealthCheckSpec{MaxUnhealthy: pct("40%")}, 5, 1, true, 1},
		{"a count", machinaio.MachineHealthCheckSpec{MaxUnhealthy: num(1)}, 10, 2, false, 0},
		{"0 allows none", machinaio.MachineHealthCheckSpec{MaxUnhealthy: num(0)}, 10, 1, false, 0},
		{"within range", machinaio.MachineHealthCheckSpec{UnhealthyRange: "[1-3]"}, 10, 2, true, 1},
		{"below range", machinaio.MachineHealthCheckSpec{UnhealthyRange: "[1-3]"}, 10, 0, false, 0},
		{"above range", machinaio.MachineHealthCheckSpec{UnhealthyRange: "[1-3]"}, 10, 4, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := shortCircuit(&tc.spec, tc.expected, tc.unhealthy)
			require.NoError(t, err)
			assert.Equal(t, tc.allowed, l.allowed)
			assert.Equal(t, tc.remaining, l.remaining)
		})
	}
	_, err := shortCircuit(&machinaio.MachineHealthCheckSpec{UnhealthyRange: "[3-1]"}, 5, 2)
	assert.ErrorContains(t, err, "spec.unhealthyRange \"[3-1]\" has its minimum above its maximum")
	_, err = shortCircuit(&machinaio.MachineHealthCheckSpec{MaxUnhealthy: pct("lots")}, 5, 2)
	assert.ErrorContains(t, err, "spec.maxUnhealthy")
}
