package pythoninmemory

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance"
	"github.com/machina-io/machina/conformance/conformancetest"
)

// TestLauncherMode lets the conformance suite start the Python driver
// itself (launcher mode) and runs its Launcher checks; every check must
// run and pass without a warning.
func TestLauncherMode(t *testing.T) {
	class, err := conformance.LoadMachineClass(classFile)
	require.NoError(t, err)
	conformancetest.CheckLauncherMode(t, program(t).CommandLine("--shutdown-grace", "10"), class, 0.3)
}
