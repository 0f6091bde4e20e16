package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/machina-io/machina/internal/process"
)

// Waiting: every expectation of the suite is a condition polled until it
// holds or a deadline passes, never a fixed sleep.
const (
	// waitTimeout bounds one wait. MCM's framework waits 300s on a cloud;
	// a virtual node joins in about a second, so two minutes leave ample
	// room on a loaded machine and still end a broken run quickly.
	waitTimeout = 2 * time.Minute
	// pollInterval is how often a condition is read. It is short because
	// scenario 4 measures availability to within a poll.
	pollInterval = 200 * time.Millisecond
	// deadlineMargin is kept free before go test's -timeout, so that a wait
	// fails (and the processes and the API server are stopped by the
	// cleanups) before the test binary is killed with everything running.
	deadlineMargin = 45 * time.Second
)

// condition reads the cluster once. It reports whether the awaited state is
// reached and describes what it saw, for the failure message. An error is
// transient (the next poll retries) unless the deadline passes.
type condition func(ctx context.Context) (done bool, state string, err error)

// eventually polls cond until it holds and fails the test when the deadline
// passes first or when the manager or the driver exits. It returns how long
// the wait took.
func (s *suite) eventually(t *testing.T, what string, cond condition) time.Duration {
	t.Helper()
	return s.eventuallyWithin(t, waitTimeout, what, cond)
}

// eventuallyWithin is eventually with a timeout of its own, for a state
// that must follow quickly from one already reached.
func (s *suite) eventuallyWithin(t *testing.T, timeout time.Duration, what string, cond condition) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(timeout)
	if d, ok := t.Deadline(); ok && d.Add(-deadlineMargin).Before(deadline) {
		deadline = d.Add(-deadlineMargin)
	}
	ctx := t.Context()
	var state string
	var err error
	for {
		if perr := s.processesRunning(); perr != nil {
			t.Fatalf("waiting for %s: %v", what, perr)
		}
		var done bool
		readCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		done, state, err = cond(readCtx)
		cancel()
		if done && err == nil {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			if err != nil {
				state = fmt.Sprintf("%s (last error: %v)", state, err)
			}
			t.Fatalf("%s: not reached within %s; last seen: %s", what, deadline.Sub(start).Round(time.Second), state)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}

// processesRunning fails when the manager or the driver has exited.
func (s *suite) processesRunning() error {
	for _, p := range []*process.Process{s.driver, s.manager} {
		if p != nil && !p.Running() {
			return p.ExitError(40)
		}
	}
	return nil
}
