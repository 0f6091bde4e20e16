package pythoninmemory

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance"
)

// deadlineRuns is how often the deadline checks run against the slow
// driver: enough that a check which fails a correct driver at random, as
// the deadline check once did about every second run against grpc-go,
// cannot pass.
const deadlineRuns = 50

// deadlineChecks selects the checks that send calls with a short deadline.
var deadlineChecks = regexp.MustCompile(`^(Deadlines/answered_by_deadline|CreateMachine/timed_out_create_retried)$`)

// TestDeadlineChecksPassSlowDriver runs the deadline checks 50 times, all at
// once, against the Python driver with a createDelay longer than the
// deadline: a correct driver whose handler keeps sleeping past the deadline
// while grpc-python's runtime ends the call. Not one run may fail.
func TestDeadlineChecksPassSlowDriver(t *testing.T) {
	d := startDriver(t)
	cfg := conformance.Config{
		Endpoint: d.Endpoint,
		MachineClass: conformance.MachineClass{
			Name: "python-conformance", Provider: "python-inmemory",
			ProviderSpec: json.RawMessage(`{"size":"small","createDelay":1}`),
		},
		ShortDeadline: 500 * time.Millisecond,
		Timeouts: conformance.Timeouts{
			Identity: 30 * time.Second, Ready: 30 * time.Second,
			Create: 30 * time.Second, Delete: 30 * time.Second, Status: 30 * time.Second, List: 30 * time.Second,
		},
	}
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
	ended := map[string]int{}
	endedBy := regexp.MustCompile(`^CreateMachine with a 500ms deadline:? (answered [A-Z_]+|the stream was reset)`)
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
			if m := endedBy.FindStringSubmatch(strings.TrimPrefix(line, "CreateMachine: ")); m != nil {
				ended[m[1]]++
			}
		}
	}
	t.Logf("%d runs took %v; the slow CreateMachine ended: %v", deadlineRuns, time.Since(start).Round(time.Millisecond), ended)
}
