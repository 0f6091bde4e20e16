// Package conformancetest holds helpers for Go tests that run the
// conformance suite against a driver.
package conformancetest

import (
	"bytes"
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/machina-io/machina/conformance"
)

// DeadlineRuns is how often a test runs the deadline checks against one slow
// driver: enough that a check which fails a correct driver at random, as the
// deadline check once did about every second run against grpc-go, cannot
// pass.
const DeadlineRuns = 50

// DeadlineChecks selects the checks that send calls with a short deadline.
var DeadlineChecks = regexp.MustCompile(`^(Deadlines/answered_by_deadline|CreateMachine/timed_out_create_retried)$`)

// endedBy matches the log line in which Deadlines/answered_by_deadline says
// how a call with the short deadline ended.
var endedBy = regexp.MustCompile(`with a \S+ deadline:? (answered [A-Z_]+|the stream was reset)`)

// RunDeadlineChecks runs the deadline checks n times at once against cfg,
// which must point at a driver slower than cfg.ShortDeadline, and fails t for
// every run that does not pass. It returns how the slow calls of the passing
// runs ended ("answered DEADLINE_EXCEEDED", "the stream was reset", ...):
// which way a correct driver's gRPC library ends an expired call is its
// choice, so the count is for the log, not for an assertion.
func RunDeadlineChecks(t testing.TB, cfg conformance.Config, n int) map[string]int {
	t.Helper()
	start := time.Now()
	reports := make([]*conformance.Report, n)
	var wg sync.WaitGroup
	for i := range reports {
		wg.Go(func() {
			r := &conformance.Runner{Focus: DeadlineChecks}
			reports[i] = r.Run(context.Background(), cfg)
		})
	}
	wg.Wait()
	ended := map[string]int{}
	for i, rep := range reports {
		if !rep.Passed() {
			var summary bytes.Buffer
			rep.WriteSummary(&summary)
			t.Errorf("run %d of %d failed:\n%s", i+1, n, summary.String())
			continue
		}
		res, ok := rep.Result("Deadlines/answered_by_deadline")
		if !ok {
			t.Fatalf("run %d of %d has no result for Deadlines/answered_by_deadline", i+1, n)
		}
		for _, line := range res.Logs {
			if m := endedBy.FindStringSubmatch(line); m != nil {
				ended[m[1]]++
			}
		}
	}
	t.Logf("%d runs of %v took %v; the slow calls ended: %v", n, DeadlineChecks, time.Since(start).Round(time.Millisecond), ended)
	return ended
}
