package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
)

func TestUntil(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for d, want := range map[time.Duration]string{
		-time.Second:                    "overdue",
		0:                               "overdue",
		45 * time.Second:                "45s",
		14 * time.Minute:                "14m",
		14*time.Minute + 29*time.Second: "14m",
		117 * time.Minute:               "1h57m",
		2 * time.Hour:                   "2h",
		26*time.Hour + time.Minute:      "26h1m",
	} {
		assert.Equal(t, want, until(now, now.Add(d)), "%s", d)
	}
}

// TestEventCount: a repeat merged by the manager's events.k8s.io recorder
// is counted in series.count, one of a core/v1 recorder in count; why shows
// either as (xN).
func TestEventCount(t *testing.T) {
	assert.Equal(t, int32(1), eventCount(&corev1.Event{Count: 1}))
	assert.Equal(t, int32(4), eventCount(&corev1.Event{Count: 4}))
	assert.Equal(t, int32(3), eventCount(&corev1.Event{Series: &corev1.EventSeries{Count: 3}}))
	assert.Equal(t, int32(0), eventCount(&corev1.Event{}))
}
