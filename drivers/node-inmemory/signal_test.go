package nodeinmemory

import (
	"syscall"
	"testing"

	"github.com/machina-io/machina/conformance/conformancetest"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// TestStopSignalsAlwaysStopGracefully starts the driver 18 times, three at
// a time, and sends SIGTERM or SIGINT at start, when idle and under load.
// Every time the driver must act on it: log "stopping gracefully", exit 0
// within 15s and remove its socket. main.js takes both signals before it
// loads anything, so one that arrives while the driver starts is acted on
// once it serves.
func TestStopSignalsAlwaysStopGracefully(t *testing.T) {
	conformancetest.CheckStopSignals(t, program(t), conformancetest.StopSignals{
		Runs: 18, Parallel: 3,
		Signals:  []syscall.Signal{syscall.SIGTERM, syscall.SIGINT},
		Args:     []string{"--shutdown-grace", "5"},
		Class:    &driverv1alpha1.MachineClass{Name: "small", Namespace: "default", ProviderSpec: []byte(`{}`)},
		LogLines: conformancetest.ReferenceLogLines,
	})
}
