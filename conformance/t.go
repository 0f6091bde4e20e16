package conformance

import "testing"

// T is the part of testing.TB the suite needs, plus Run for subtests. The
// suite is written against T, not *testing.T, so that it runs both inside
// `go test` (see Run) and in the machina-conformance binary (see Runner),
// which cannot use the testing package's runner.
//
// The semantics are those of *testing.T: Errorf marks the test failed and
// continues, Fatalf and Skipf end the test's goroutine, cleanups run last in,
// first out after the test and its subtests finish, and a failed subtest
// fails its parent.
type T interface {
	Helper()
	Name() string
	Logf(format string, args ...any)
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
	Failed() bool
	Cleanup(f func())
	// Run runs f as a subtest called name and reports whether it passed.
	Run(name string, f func(t T)) bool
}

// Run runs the whole suite against cfg.Endpoint as subtests of t. Use it in
// a driver's own tests:
//
//	func TestConformance(t *testing.T) {
//		endpoint := startMyDriver(t) // e.g. "unix:///tmp/x/driver.sock"
//		conformance.Run(t, conformance.Config{
//			Endpoint:     endpoint,
//			MachineClass: conformance.MachineClass{ProviderSpec: []byte(`{"size":"small"}`)},
//		})
//	}
//
// Select tests with `go test -run 'TestConformance/CreateMachine/'`.
func Run(t *testing.T, cfg Config) {
	t.Helper()
	RunT(testingT{t}, cfg)
}

// testingT adapts *testing.T to T.
type testingT struct{ *testing.T }

// Run runs f as a testing subtest.
func (t testingT) Run(name string, f func(t T)) bool {
	return t.T.Run(name, func(tt *testing.T) { f(testingT{tt}) })
}
