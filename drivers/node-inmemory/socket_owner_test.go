package nodeinmemory

import (
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStopKeepsASuccessorsSocket: Node's runtime unlinks the path a
// listener was bound to when grpc-js closes it, whatever file is there by
// then. A stopping driver must remove only its own socket (§2.2), never the
// one a driver started since put at the same path.
func TestStopKeepsASuccessorsSocket(t *testing.T) {
	d := startDriver(t)
	// A successor removes the socket and listens at the path while this
	// driver still runs (a careless start script, an operator).
	require.NoError(t, os.Remove(d.Socket))
	successor, err := net.Listen("unix", d.Socket)
	require.NoError(t, err)
	successor.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { _ = successor.Close() })
	theirs, err := os.Lstat(d.Socket)
	require.NoError(t, err)

	d.Signal(syscall.SIGTERM)
	assert.Equal(t, 0, d.wait(t, 30*time.Second), "exit status after SIGTERM")
	now, err := os.Lstat(d.Socket)
	require.NoError(t, err, "the successor's socket must survive the stop")
	assert.True(t, os.SameFile(theirs, now), "the file at the path is still the successor's socket")
}
