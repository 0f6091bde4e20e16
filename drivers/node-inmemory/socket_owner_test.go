package nodeinmemory

import (
	"testing"

	"github.com/machina-io/machina/conformance/conformancetest"
)

// TestStopKeepsASuccessorsSocket: Node.js unlinks the path a listener was
// bound to when it closes, whatever file is there by then. A stopping
// driver must remove only its own socket (§2.7), never the one a driver
// started since put at the same path.
func TestStopKeepsASuccessorsSocket(t *testing.T) {
	conformancetest.CheckSuccessorsSocketKept(t, program(t))
}
