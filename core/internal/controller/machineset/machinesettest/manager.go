package machinesettest

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// StartManager starts a controller-runtime manager against cfg with the
// controllers that register adds, and stops it when the test ends. Metrics
// and health servers are off; controller names may repeat across managers of
// one test binary.
func StartManager(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, register func(ctrl.Manager) error) ctrl.Manager {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatalf("machinesettest: new manager: %v", err)
	}
	if err := register(mgr); err != nil {
		t.Fatalf("machinesettest: registering controllers: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("machinesettest: manager stopped with error: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("machinesettest: cache did not sync")
	}
	return mgr
}
