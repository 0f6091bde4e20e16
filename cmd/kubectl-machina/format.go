package main

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// age is how long ago t was, as kubectl prints ages ("5m", "3d").
func age(now, t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// until is how long from now until t ("14m", "1h57m", "45s"); "overdue"
// once past. Unlike an age it keeps hours and minutes together: a deadline
// is read to the minute.
func until(now, t time.Time) string {
	d := t.Sub(now)
	if d <= 0 {
		return "overdue"
	}
	if d < 2*time.Minute {
		return d.Round(time.Second).String()
	}
	s := strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// lastOperation is a machine's lastOperation in one line.
func lastOperation(op v1alpha1.LastOperation, max int) string {
	if op.Type == "" && op.State == "" && op.Description == "" {
		return "-"
	}
	s := strings.TrimSpace(fmt.Sprintf("%s %s", op.Type, op.State))
	if op.Description != "" {
		s += ": " + oneLine(op.Description)
	}
	return truncate(s, max)
}

// oneLine folds a multi-line message into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncate cuts s to max runes, marking the cut; max <= 0 keeps all.
func truncate(s string, max int) string {
	r := []rune(s)
	if max <= 0 || len(r) <= max {
		return s
	}
	return string(r[:max-1]) + "…"
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
