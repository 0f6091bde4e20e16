package driver

import "github.com/prometheus/client_golang/prometheus"

// cloudAPIMetrics are MCM's cloud API metrics (machine-controller-manager
// pkg/util/provider/metrics/metrics.go): mcm_cloud_api_requests_total,
// mcm_cloud_api_requests_failed_total and the histogram
// mcm_cloud_api_api_request_duration_seconds, by provider and service. In
// MCM the provider's code counts its own calls to the cloud; in machina that
// code runs in the driver, out of the core's sight, so the core counts each
// Driver API machine call as one request, the service being the call
// (create_machine, ...). A dashboard built for MCM shows the load the
// manager puts on its provider; a driver may export its own cloud calls.
type cloudAPIMetrics struct {
	requests *prometheus.CounterVec
	failed   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newCloudAPIMetrics() cloudAPIMetrics {
	labels := []string{"provider", "service"}
	return cloudAPIMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcm_cloud_api_requests_total",
			Help: "Driver machine calls of the manager, by provider and call (MCM's cloud API request count).",
		}, labels),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mcm_cloud_api_requests_failed_total",
			Help: "Failed driver machine calls of the manager, by provider and call (MCM's failed cloud API request count).",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "mcm_cloud_api_api_request_duration_seconds",
			Help:    "Duration of successful driver machine calls, by provider and call (MCM's cloud API request duration).",
			Buckets: durationBuckets,
		}, labels),
	}
}

func (c cloudAPIMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.requests, c.failed, c.duration}
}

// observe records one finished call; MCM's duration histogram holds
// successful requests only.
func (c cloudAPIMetrics) observe(provider, service string, ok bool, seconds float64) {
	c.requests.WithLabelValues(provider, service).Inc()
	if !ok {
		c.failed.WithLabelValues(provider, service).Inc()
		return
	}
	c.duration.WithLabelValues(provider, service).Observe(seconds)
}

// initialize creates the request and failure counters of every call of a
// provider at 0, so that the first failure is a change rate() sees, not a
// series that appears already at 1.
func (c cloudAPIMetrics) initialize(provider string) {
	for _, service := range mcmOperations {
		c.requests.WithLabelValues(provider, service)
		c.failed.WithLabelValues(provider, service)
	}
}
