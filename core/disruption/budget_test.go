package disruption_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestAllowWindows(t *testing.T) {
	// Working hours: no rollout replaces more than one machine; none at all
	// on weekends' maintenance-free days is a second budget.
	budgets := []v1alpha1.DisruptionBudget{
		{Machines: intstr.FromInt32(1), Reasons: []v1alpha1.DisruptionReason{v1alpha1.DisruptionReasonRollout},
			Schedule: "0 9 * * 1-5", Duration: v1alpha1.NewDuration(8 * time.Hour)},
		{Machines: intstr.FromString("10%")},
	}
	for _, tc := range []struct {
		name     string
		now      string
		reason   v1alpha1.DisruptionReason
		machines int32
		next     string
	}{
		// 2026-11-30 is a Monday.
		{"inside the window the smaller budget holds", "2026-11-30T10:00:00Z", v1alpha1.DisruptionReasonRollout, 1, "2026-11-30T17:00:00Z"},
		{"the window opens at its start", "2026-11-30T09:00:00Z", v1alpha1.DisruptionReasonRollout, 1, "2026-11-30T17:00:00Z"},
		{"the window is closed at its end", "2026-11-30T17:00:00Z", v1alpha1.DisruptionReasonRollout, 2, "2026-12-01T09:00:00Z"},
		{"before the window the always-on budget holds", "2026-11-30T08:59:59Z", v1alpha1.DisruptionReasonRollout, 2, "2026-11-30T09:00:00Z"},
		{"no window on Saturday", "2026-12-05T10:00:00Z", v1alpha1.DisruptionReasonRollout, 2, "2026-12-07T09:00:00Z"},
		{"a reason the window does not name", "2026-11-30T10:00:00Z", v1alpha1.DisruptionReasonExpired, 2, "2026-11-30T17:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 10% of 15 rounds up to 2.
			l, err := disruption.Allow(budgets, tc.reason, 15, at(tc.now))
			require.NoError(t, err)
			assert.True(t, l.Limited)
			assert.Equal(t, tc.machines, l.Machines, l.Why)
			if tc.reason == v1alpha1.DisruptionReasonRollout {
				assert.Equal(t, at(tc.next), l.Next)
			}
		})
	}
}

func TestAllowUnlimitedAndInvalid(t *testing.T) {
	l, err := disruption.Allow(nil, v1alpha1.DisruptionReasonRollout, 3, time.Now())
	require.NoError(t, err)
	assert.False(t, l.Limited, "no budget, no limit")

	only := []v1alpha1.DisruptionBudget{{Machines: intstr.FromInt32(0), Reasons: []v1alpha1.DisruptionReason{v1alpha1.DisruptionReasonDrifted}}}
	l, err = disruption.Allow(only, v1alpha1.DisruptionReasonRollout, 3, time.Now())
	require.NoError(t, err)
	assert.False(t, l.Limited, "a budget of another reason does not limit")
	l, err = disruption.Allow(only, v1alpha1.DisruptionReasonDrifted, 3, time.Now())
	require.NoError(t, err)
	assert.Equal(t, disruption.Limit{Limited: true, Machines: 0, Why: "spec.disruption.budgets[0] (0 machines)"}, l)

	for _, bad := range []v1alpha1.DisruptionBudget{
		{Machines: intstr.FromInt32(1), Schedule: "every day", Duration: v1alpha1.NewDuration(time.Hour)},
		{Machines: intstr.FromInt32(1), Schedule: "@daily"},
		{Machines: intstr.FromString("ten")},
	} {
		assert.Error(t, disruption.Validate([]v1alpha1.DisruptionBudget{bad}), "%+v", bad)
	}
	assert.NoError(t, disruption.Validate([]v1alpha1.DisruptionBudget{{Machines: intstr.FromInt32(1), Schedule: "@daily", Duration: v1alpha1.NewDuration(time.Hour)}}))
}
