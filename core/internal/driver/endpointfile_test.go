package driver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A wrong socket path is the commonest first failure of a deployment: the
// manager's log and its error name the file and what is wrong with it, not
// only gRPC's TRANSIENT_FAILURE.
func TestConnectNamesAMissingOrNonSocketEndpointFile(t *testing.T) {
	missing := socketPath(t)
	notSocket := filepath.Join(t.TempDir(), "driver.sock")
	require.NoError(t, os.WriteFile(notSocket, nil, 0o600))
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", missing, "socket file " + missing + " does not exist"},
		{"not a socket", notSocket, notSocket + " is not a socket but a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &logBuffer{}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, err := Connect(ctx, "unix://"+tc.path, testOptions(logs))
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.True(t, logs.contains(tc.want), "the waiting log names the file: %s", logs)
		})
	}
}

func TestEndpointFileProblem(t *testing.T) {
	assert.NoError(t, endpointFileProblem("tcp://127.0.0.1:1"), "only a dial tells a TCP endpoint's problem")
	path := socketPath(t)
	serve(t, path, newTestDriver())
	assert.NoError(t, endpointFileProblem("unix://"+path), "a listening socket")
	dir := t.TempDir()
	assert.ErrorContains(t, endpointFileProblem("unix://"+dir), dir+" is not a socket but a directory")
}
