// Package controllertest holds what the envtest-based tests of the small
// controllers (machineclass, secret, node) share: a manager that runs only
// the controllers under test, and waits for the API server and the cache to
// reach a state. It is imported by tests only.
package controllertest

import "time"

// How long the helpers wait for a condition, and how often they look.
// WaitFor is generous because tests run while other packages compile on the
// same small machine.
const (
	WaitFor = 30 * time.Second
	Tick    = 50 * time.Millisecond
)
