package safetytest

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/drivers/inmemory"
	"github.com/machina-io/machina/sdk"
)

// Driver is an inmemory driver served on a Unix socket, and the core's
// client connected to it.
type Driver struct {
	// VMs is the driver itself: test code creates and inspects VMs on it
	// directly and injects faults.
	VMs *inmemory.Driver
	// Client is the core's driver client, as the controllers use it.
	Client *driver.Client
}

// StartDriver serves an inmemory driver configured by opts on a fresh
// socket, connects a client to it, and stops both when the test ends.
func StartDriver(t testing.TB, opts inmemory.Options) *Driver {
	t.Helper()
	// t.TempDir() paths can exceed the 107-byte socket path limit.
	dir, err := os.MkdirTemp("", "msafe")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "d.sock")

	// The driver's and the SDK's logs would drown the test output.
	quiet := slog.New(slog.DiscardHandler)
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	vms := inmemory.New(opts)
	srv, err := inmemory.NewServer(vms, sdk.WithLogger(quiet))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, endpoint) }()

	connectCtx, connectCancel := context.WithTimeout(ctx, 30*time.Second)
	defer connectCancel()
	c, err := driver.Connect(connectCtx, endpoint, driver.Options{Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("inmemory driver: %v", err)
		}
	})
	return &Driver{VMs: vms, Client: c}
}
