package mcdrain_test

import (
	"os"
	"testing"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func TestMain(m *testing.M) {
	// The controller's logs, for a failing test's output (go test shows
	// a package's output only when it fails, or with -v).
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr)))
	os.Exit(m.Run())
}
