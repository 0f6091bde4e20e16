package apiserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// TestProbeClassifiesAnswers checks which HTTP answers of /readyz count as
// an unreachable API server, against real HTTP servers.
func TestProbeClassifiesAnswers(t *testing.T) {
	for _, tc := range []struct {
		code      int
		reachable bool
	}{
		{http.StatusOK, true},
		{http.StatusUnauthorized, true}, // up, but not telling us
		{http.StatusForbidden, true},
		{http.StatusNotFound, true},
		{http.StatusTooManyRequests, true}, // busy, not gone
		{http.StatusInternalServerError, false},
		{http.StatusServiceUnavailable, false},
		{http.StatusGatewayTimeout, false},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/readyz" {
				http.Error(w, "wrong path "+r.URL.Path, http.StatusBadRequest)
				return
			}
			w.WriteHeader(tc.code)
		}))
		p, err := newProber(Cluster{Name: "test", Config: &rest.Config{Host: srv.URL}}, time.Second)
		require.NoError(t, err)
		err = p.probe(context.Background())
		assert.Equal(t, tc.reachable, err == nil, "HTTP %d: %v", tc.code, err)
		srv.Close()

		// Closed: nobody answers.
		err = p.probe(context.Background())
		assert.Error(t, err, "a closed server must be unreachable")
	}
}

// TestProbeTimeout checks that an API server that accepts connections but
// never answers is unreachable after the probe timeout.
func TestProbeTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	p, err := newProber(Cluster{Name: "test", Config: &rest.Config{Host: srv.URL}}, 200*time.Millisecond)
	require.NoError(t, err)
	start := time.Now()
	require.Error(t, p.probe(context.Background()))
	assert.Less(t, time.Since(start), 5*time.Second)
}
