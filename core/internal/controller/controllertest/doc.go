// Package controllertest is the test kit of the envtest-based controller
// tests under core: a manager that runs only the controllers under test
// (StartManager or RunManager, on a control plane from core/testenv), one
// family of waits with one deadline (Eventually, WaitObject, WaitGone,
// WaitCached, RequireEvent, RequireFinalizer, RequireGone), and one logger
// setting (UseTestLogger: the controllers' logs on stderr when
// MACHINA_TEST_LOG is set). It is imported by tests only.
package controllertest

import "time"

// How long the helpers wait for a condition, and how often they look.
// WaitFor is generous because tests run while other packages compile on the
// same small machine.
const (
	WaitFor = 30 * time.Second
	Tick    = 50 * time.Millisecond
)
