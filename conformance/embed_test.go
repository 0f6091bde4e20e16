package conformance_test

import (
	"testing"

	"github.com/machina-io/machina/conformance"
)

// TestEmbedded is how a driver runs the suite in its own `go test`: start
// the driver on a socket, then conformance.Run. Here the driver is the
// reference driver of these tests.
func TestEmbedded(t *testing.T) {
	endpoint := serveRef(t, newRefDriver(allCaps, breakage{}))
	conformance.Run(t, refConfig(endpoint))
}
