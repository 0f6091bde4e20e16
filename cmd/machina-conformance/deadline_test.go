package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance"
	"github.com/machina-io/machina/conformance/conformancetest"
)

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
	// grpc-go ends an expired call with DEADLINE_EXCEEDED or a stream
	// reset, whichever comes first; either way is a pass.
	conformancetest.RunDeadlineChecks(t, cfg, conformancetest.DeadlineRuns)
}
