package mcgc_test

import (
	"os"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Controller logs go to stderr when MACHINA_TEST_LOG is set; otherwise they
// are discarded (and controller-runtime does not complain about a missing
// logger).
func init() {
	if os.Getenv("MACHINA_TEST_LOG") != "" {
		ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
		return
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(discard{})))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
