package sdk

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListenSocketPermissions(t *testing.T) {
	path := socketPath(t)
	lis, err := Listen("unix://" + path)
	require.NoError(t, err)
	defer lis.Close()

	fi, err := os.Lstat(path)
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSocket, fi.Mode().Type())
	assert.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
}

func TestListenCreatesParentDirectory(t *testing.T) {
	path := filepath.Join(filepath.Dir(socketPath(t)), "run", "d.sock")
	lis, err := Listen("unix://" + path)
	require.NoError(t, err)
	defer lis.Close()

	fi, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())
	// The process umask may remove bits, never add them.
	assert.Zero(t, fi.Mode().Perm()&^0o750, "directory mode %v", fi.Mode().Perm())
}

// leaveStaleSocket creates a socket file with no server behind it, as a
// killed driver leaves it.
func leaveStaleSocket(t *testing.T, path string) {
	t.Helper()
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	require.NoError(t, l.Close())
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.Equal(t, fs.ModeSocket, fi.Mode().Type())
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := socketPath(t)
	leaveStaleSocket(t, path)

	lis, err := Listen("unix://" + path)
	require.NoError(t, err)
	defer lis.Close()

	// The new listener accepts connections on the path.
	accepted := make(chan error, 1)
	go func() {
		c, err := lis.Accept()
		if err == nil {
			_ = c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("unix", path)
	require.NoError(t, err)
	_ = c.Close()
	require.NoError(t, <-accepted)
}

func TestListenRefusesSocketInUse(t *testing.T) {
	path := socketPath(t)
	live, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer live.Close()

	_, err = Listen("unix://" + path)
	require.ErrorContains(t, err, "in use")
	_, err = os.Lstat(path)
	require.NoError(t, err, "the live socket is left alone")
}

func TestListenDoesNotDeleteRegularFile(t *testing.T) {
	path := socketPath(t)
	require.NoError(t, os.WriteFile(path, []byte("precious"), 0o600))

	_, err := Listen("unix://" + path)
	require.ErrorContains(t, err, "not a socket")

	content, err := os.ReadFile(path)
	require.NoError(t, err, "the file still exists")
	assert.Equal(t, "precious", string(content))
}

func TestListenClosingRemovesSocket(t *testing.T) {
	path := socketPath(t)
	lis, err := Listen("unix://" + path)
	require.NoError(t, err)
	require.NoError(t, lis.Close())
	_, err = os.Lstat(path)
	assert.True(t, os.IsNotExist(err))
}

func TestListenTCPForDevelopment(t *testing.T) {
	lis, err := Listen("tcp://127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	assert.Equal(t, "tcp", lis.Addr().Network())
}

func TestListenRejectsBadEndpoints(t *testing.T) {
	tests := map[string]string{
		"unix://relative/driver.sock":         "must be absolute",
		"unix://":                             "missing socket path",
		"unix:///" + strings.Repeat("d", 107): "at most 107 are possible",
		"/var/run/driver.sock":                "unsupported scheme",
		"unix:/var/run/driver.sock":           "unsupported scheme",
		"http://localhost:80":                 "unsupported scheme",
		"tcp://localhost":                     "want tcp://host:port",
		"":                                    "unsupported scheme",
	}
	for ep, want := range tests {
		t.Run(ep, func(t *testing.T) {
			_, err := Listen(ep)
			require.ErrorContains(t, err, want)
		})
	}
}
