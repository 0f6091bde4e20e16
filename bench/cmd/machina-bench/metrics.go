package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// rateLimiterMetric is the manager's histogram of the time requests waited
// for the client-side rate limiter (--kube-api-qps, --kube-api-burst).
const rateLimiterMetric = "rest_client_rate_limiter_duration_seconds"

// limiterWait is the sum and count of rateLimiterMetric over every label
// set: the seconds requests spent waiting for the limiter, and how many
// requests went through it.
type limiterWait struct {
	seconds  float64
	requests float64
}

// scrapeLimiterWait reads rateLimiterMetric from the manager's /metrics.
func scrapeLimiterWait(ctx context.Context, metricsAddr string) (limiterWait, error) {
	var w limiterWait
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+metricsAddr+"/metrics", nil)
	if err != nil {
		return w, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return w, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return w, fmt.Errorf("manager /metrics: %s", resp.Status)
	}
	found := false
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		if !ok {
			name, rest, ok = strings.Cut(line, " ")
		}
		if !ok || (name != rateLimiterMetric+"_sum" && name != rateLimiterMetric+"_count") {
			continue
		}
		fields := strings.Fields(rest)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return w, fmt.Errorf("manager /metrics: %q: %w", line, err)
		}
		found = true
		if name == rateLimiterMetric+"_sum" {
			w.seconds += v
		} else {
			w.requests += v
		}
	}
	if err := sc.Err(); err != nil {
		return w, err
	}
	if !found {
		return w, fmt.Errorf("manager /metrics has no %s", rateLimiterMetric)
	}
	return w, nil
}
