package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func serveMetrics(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/metrics", r.URL.Path)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func TestScrapeLimiterWaitSumsEveryLabelSet(t *testing.T) {
	addr := serveMetrics(t, `# HELP rest_client_rate_limiter_duration_seconds Client side rate limiter latency in seconds.
# TYPE rest_client_rate_limiter_duration_seconds histogram
rest_client_rate_limiter_duration_seconds_bucket{host="127.0.0.1:1",verb="GET",le="0.005"} 10
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:1",verb="GET"} 1.5
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:1",verb="GET"} 10
rest_client_rate_limiter_duration_seconds_sum{host="127.0.0.1:1",verb="PATCH"} 2.25
rest_client_rate_limiter_duration_seconds_count{host="127.0.0.1:1",verb="PATCH"} 30
rest_client_requests_total{code="200",host="127.0.0.1:1",method="GET"} 99
`)
	w, err := scrapeLimiterWait(context.Background(), addr)
	require.NoError(t, err)
	assert.InDelta(t, 3.75, w.seconds, 1e-9)
	assert.InDelta(t, 40.0, w.requests, 1e-9)
}

func TestScrapeLimiterWaitFailsWithoutTheMetric(t *testing.T) {
	addr := serveMetrics(t, "rest_client_requests_total{code=\"200\"} 99\n")
	_, err := scrapeLimiterWait(context.Background(), addr)
	require.ErrorContains(t, err, rateLimiterMetric)
}
