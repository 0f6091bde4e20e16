// Package inmemorytest serves an inmemory driver on a real Unix socket for
// the tests of other modules (the core's controller tests), so that they need
// no copy of the serving code. It is imported by tests only; it lives in the
// driver's module so that the core's production packages never depend on a
// driver.
package inmemorytest

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/machina-io/machina/drivers/inmemory"
	"github.com/machina-io/machina/sdk"
)

// Serve serves an inmemory driver configured by opts on a fresh socket and
// returns the driver (test code creates and inspects VMs on it directly and
// injects faults) and the socket's endpoint ("unix://..."). The server stops
// when the test ends. The driver's and the SDK's logs are discarded unless
// opts.Logger is set: they would drown the test output.
func Serve(t testing.TB, opts inmemory.Options) (*inmemory.Driver, string) {
	t.Helper()
	// t.TempDir() paths can exceed the 107-byte socket path limit.
	dir, err := os.MkdirTemp("", "minmem")
	if err != nil {
		t.Fatalf("inmemorytest: socket directory: %v", err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "d.sock")

	quiet := slog.New(slog.DiscardHandler)
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	vms := inmemory.New(opts)
	srv, err := inmemory.NewServer(vms, sdk.WithLogger(quiet))
	if err != nil {
		t.Fatalf("inmemorytest: new server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, endpoint) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("inmemory driver: %v", err)
		}
	})
	return vms, endpoint
}
