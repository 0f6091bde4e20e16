package driver

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

func TestReady(t *testing.T) {
	path := socketPath(t)
	d := newTestDriver()
	stop := serve(t, path, d)
	c := connect(t, path, testOptions(&logBuffer{}))
	check := c.HealthChecker()
	req := httptest.NewRequest("GET", "/readyz", nil)

	require.NoError(t, c.Ready(context.Background()))
	require.NoError(t, check(req))

	d.setProbes(probeAnswer{ready: ptrTo(false)})
	err := c.Ready(context.Background())
	require.ErrorIs(t, err, errNotReady)
	require.ErrorIs(t, check(req), errNotReady)

	d.setProbes(probeAnswer{ready: ptrTo(true)})
	require.NoError(t, c.Ready(context.Background()))

	stop()
	err = c.Ready(context.Background())
	require.Error(t, err)
	assert.Equal(t, codes.Unavailable, Code(err))
	assert.Error(t, check(req))

	// A driver that stopped removed its socket: the check names the file.
	err = c.Ready(context.Background())
	assert.ErrorContains(t, err, "socket file "+path+" does not exist")
	assert.Equal(t, codes.Unavailable, Code(err))
}
