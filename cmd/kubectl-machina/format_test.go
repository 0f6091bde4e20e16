package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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
