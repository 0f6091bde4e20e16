package sdk

import (
	"net"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replaceSocket puts a new listening socket at path, as another driver
// process does that removed the file (a careless start script, an operator)
// while this one still served. It returns the new socket's file info.
func replaceSocket(t *testing.T, path string) os.FileInfo {
	t.Helper()
	require.NoError(t, os.Remove(path))
	successor, err := net.Listen("unix", path)
	require.NoError(t, err)
	// The successor's file is the test's to remove, not its listener's.
	successor.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { _ = successor.Close() })
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	return fi
}

// TestServeKeepsASuccessorsSocket: Go's Unix listener unlinks its path when
// it closes, whatever file is there by then. A stopping driver must remove
// only the socket it created (§2.7), never the one another process created
// at the same path since.
func TestServeKeepsASuccessorsSocket(t *testing.T) {
	r := startServer(t, newServer(t, newTestDriver()))
	successor := replaceSocket(t, r.path)

	r.cancel()
	require.NoError(t, r.waitStopped(t))
	now, err := os.Lstat(r.path)
	require.NoError(t, err, "the successor's socket must survive the stop")
	assert.True(t, os.SameFile(successor, now), "the file at the path is still the successor's socket")
}

// TestListenerCloseKeepsASuccessorsSocket is the same for a listener from
// Listen used on its own: closing it removes its own socket file, and only
// that.
func TestListenerCloseKeepsASuccessorsSocket(t *testing.T) {
	path := socketPath(t)
	lis, err := Listen("unix://" + path)
	require.NoError(t, err)
	successor := replaceSocket(t, path)
	require.NoError(t, lis.Close())
	now, err := os.Lstat(path)
	require.NoError(t, err, "the successor's socket must survive the close")
	assert.True(t, os.SameFile(successor, now))

	// Without a successor, closing removes the listener's own file.
	path = socketPath(t)
	lis, err = Listen("unix://" + path)
	require.NoError(t, err)
	require.NoError(t, lis.Close())
	_, err = os.Lstat(path)
	assert.True(t, os.IsNotExist(err), "the listener's own socket is removed on close: %v", err)
}
