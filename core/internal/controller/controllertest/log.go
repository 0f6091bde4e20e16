package controllertest

import (
	"os"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// LogEnv names the environment variable that turns the controllers' logs on
// in tests: `MACHINA_TEST_LOG=1 go test -v ./...`.
const LogEnv = "MACHINA_TEST_LOG"

// UseTestLogger sets controller-runtime's logger for a test binary: zap in
// development mode to stderr when MACHINA_TEST_LOG is set, otherwise a
// logger that drops everything (so that passing runs stay quiet, and
// controller-runtime does not complain that no logger was set). A package
// calls it once, from init or TestMain, before a manager starts.
func UseTestLogger() {
	if os.Getenv(LogEnv) != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
		return
	}
	ctrl.SetLogger(logr.Discard())
}
