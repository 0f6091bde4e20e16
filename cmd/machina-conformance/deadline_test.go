package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance"
)

// deadlineRuns is how often the deadline checks run against one slow
// driver: enough that a check which fails a correct driver at random, as
// the deadline check once did about every second run, cannot pass.
const deadlineRuns = 50

// deadlineChecks selects the checks that send calls with a short deadline.
var deadlineChecks = regexp.MustCompile(`^(Deadlines/answered_by_deadline|CreateMachine/timed_out_create_retried)$`)

// TestDeadlineChecksPassSlowDriver runs the deadline checks 50 times, all at
// once, against the in-memory driver made slower than every deadline with
// --fault: a correct driver, whose calls grpc-go ends at the deadline with
// either the handler's DEADLINE_EXCEEDED or a RST_STREAM(CANCEL) of its
// server transport, whichever comes first. Not one run may fail.
func TestDeadlineChecksPassSlowDriver(t *testing.T) {
	_, driver := binaries(t)
	// Longer than the deadline, shorter than the suite's own timeouts, so
	// that the retried create of timed_out_create_retried completes.
	endpoint := startDriver(t, driver, "--fault", "CreateMachine:latency=1s;GetMachineStatus:latency=1s")
	class, err := conformance.LoadMachineClass(filepath.Join(testdata, "machineclass.yaml"))
	require.NoError(t, err)
	cfg := conformance.Config{
		Endpoint:      endpoint,
		MachineClass:  class,
		ShortDeadline: 500 * time.Millisecond,
		Timeouts:      conformance.Timeouts{Create: 30 * time.Second, Delete: 30 * time.Second, Status: 30 * time.Second},
	}
	resets, statuses := runDeadlineChecks(t, cfg)
	// How grpc-go ended the slow calls; either way is a pass.
	t.Logf("%d runs passed; the slow calls ended with a stream reset %d times and with a status %d times", deadlineRuns, resets, statuses)
}

// runDeadlineChecks runs the deadline checks deadlineRuns times in parallel
// against cfg, fails t for every run that does not pass, and counts how the
// calls of the short deadline ended.
func runDeadlineChecks(t *testing.T, cfg conformance.Config) (resets, statuses int) {
	t.Helper()
	start := time.Now()
	reports := make([]*conformance.Report, deadlineRuns)
	var wg sync.WaitGroup
	for i := range reports {
		wg.Go(func() {
			r := &conformance.Runner{Focus: deadlineChecks}
			reports[i] = r.Run(context.Background(), cfg)
		})
	}
	wg.Wait()
	for i, rep := range reports {
		if !rep.Passed() {
			var summary bytes.Buffer
			rep.WriteSummary(&summary)
			t.Errorf("run %d of %d failed:\n%s", i+1, deadlineRuns, summary.String())
			continue
		}
		res, ok := rep.Result("Deadlines/answered_by_deadline")
		require.True(t, ok)
		for _, line := range res.Logs {
			switch {
			case strings.Contains(line, "the stream was reset"):
				resets++
			case strings.Contains(line, "answered DEADLINE_EXCEEDED"):
				statuses++
			}
		}
	}
	t.Logf("%d runs of %v took %v", deadlineRuns, deadlineChecks, time.Since(start).Round(time.Millisecond))
	return resets, statuses
}
