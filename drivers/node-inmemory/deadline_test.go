package nodeinmemory

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/machina-io/machina/conformance"
	"github.com/machina-io/machina/conformance/conformancetest"
)

// TestDeadlineChecksPassSlowDriver runs the deadline checks 50 times, all at
// once, against the Node.js driver with a createDelay longer than the
// deadline: a correct driver whose handler keeps waiting past the deadline
// while grpc-js ends the call with DEADLINE_EXCEEDED. Not one run may fail.
func TestDeadlineChecksPassSlowDriver(t *testing.T) {
	d := startDriver(t)
	cfg := conformance.Config{
		Endpoint: d.Endpoint,
		MachineClass: conformance.MachineClass{
			Name: "node-conformance", Provider: "node-inmemory",
			ProviderSpec: json.RawMessage(`{"size":"small","createDelay":1}`),
		},
		ShortDeadline: 500 * time.Millisecond,
		Timeouts: conformance.Timeouts{
			Identity: 30 * time.Second, Ready: 30 * time.Second,
			Create: 30 * time.Second, Delete: 30 * time.Second, Status: 30 * time.Second, List: 30 * time.Second,
		},
	}
	conformancetest.RunDeadlineChecks(t, cfg, conformancetest.DeadlineRuns)
}
