// Package controllertest is the test kit of the envtest-based tests under
// core: a manager that runs only the controllers under test (StartManager
// or RunManager, on a control plane from core/testenv; NewManager and Start
// for a test that starts it cold or through a Proxy), one family of waits
// with one deadline (Eventually, WaitObject, WaitGone, WaitCached,
// RequireEvent, RequireFinalizer, RequireGone), and one logger setting
// (UseTestLogger: the controllers' logs on stderr when MACHINA_TEST_LOG is
// set). Beside them: the driver client connected to a driver the test
// serves (ConnectDriver), an API server taken away on demand (StartProxy),
// a recording of every state of a namespace's machines (ObserveMachines),
// and stand-ins for the controllers a test does not run (Joiner,
// SetMachinePhase). It is imported by tests only.
package controllertest

import "time"

// How long the helpers wait for a condition, and how often they look.
// WaitFor is generous because tests run while other packages compile on the
// same small machine.
const (
	WaitFor = 30 * time.Second
	Tick    = 50 * time.Millisecond
)
