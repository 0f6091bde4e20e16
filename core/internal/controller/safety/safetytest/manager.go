package safetytest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Timing of the tests' waits: generous, because other packages compile on
// the same small machine while the tests run.
const (
	WaitFor = 30 * time.Second
	Tick    = 20 * time.Millisecond
)

// NewManager returns a manager for cfg without metrics or health servers
// and without leader election.
func NewManager(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme) ctrl.Manager {
	t.Helper()
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	return mgr
}

// Running is a started manager.
type Running struct {
	cancel context.CancelFunc
	done   chan error
}

// Stop stops the manager and waits until it has stopped.
func (r *Running) Stop(t testing.TB) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("manager stopped with an error: %v", err)
		}
	case <-time.After(WaitFor):
		t.Fatal("manager did not stop")
	}
	r.cancel = nil
}

// Start starts mgr and stops it when the test ends (or earlier, by Stop).
// It does not wait for the caches: a test of cold caches needs the manager
// running before they sync.
func Start(t testing.TB, mgr ctrl.Manager) *Running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- mgr.Start(ctx) }()
	t.Cleanup(func() { r.Stop(t) })
	return r
}

var nsCounter atomic.Int64

// Namespace creates a fresh namespace with the given prefix.
func Namespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("%s-%d", prefix, nsCounter.Add(1)),
	}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", ns.Name, err)
	}
	return ns.Name
}
