package controllertest

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/machina-io/machina/core/internal/driver"
)

// ConnectDriver connects the core's driver client, as the controllers use
// it, to the driver at endpoint, and closes it when the test ends. The
// driver is served by the test (drivers/inmemory/inmemorytest): the core's
// production packages, and so this one, depend on no driver.
func ConnectDriver(t testing.TB, endpoint string) *driver.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitFor)
	defer cancel()
	c, err := driver.Connect(ctx, endpoint, driver.Options{Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatalf("connecting to the driver at %s: %v", endpoint, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
