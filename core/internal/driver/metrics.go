package driver

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc/codes"
)

// durationBuckets spans a fast Probe on a local socket (1ms) to a
// CreateMachine that uses its whole default timeout and more (10min).
var durationBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30, 60, 120, 300, 600,
}

// mcmOperations maps MachineService RPCs to the "operation" label values
// MCM's providers use for the same calls (list_machine is MCM's spelling),
// so that dashboards built for MCM keep working. Identity RPCs have no MCM
// counterpart and are measured only in machina's own histogram.
var mcmOperations = map[string]string{
	"CreateMachine":     "create_machine",
	"InitializeMachine": "initialize_machine",
	"DeleteMachine":     "delete_machine",
	"GetMachineStatus":  "get_machine_status",
	"ListMachines":      "list_machine",
	"GetVolumeIDs":      "get_volume_ids",
}

// callMetrics are the client's Prometheus collectors.
type callMetrics struct {
	// duration: machina_driver_request_duration_seconds{method,code}, every
	// RPC the client sends, by short RPC name and gRPC code name.
	duration *prometheus.HistogramVec
	// mcmDuration: mcm_cloud_api_driver_request_duration_seconds{provider,operation},
	// MachineService RPCs, as MCM records them.
	mcmDuration *prometheus.HistogramVec
	// mcmFailed: mcm_cloud_api_driver_requests_failed_total{provider,operation,error_code},
	// failed MachineService RPCs; error_code is the numeric gRPC code, as in MCM.
	mcmFailed *prometheus.CounterVec
}

func newCallMetrics(reg prometheus.Registerer) (*callMetrics, error) {
	duration, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "machina_driver_request_duration_seconds",
		Help:    "Duration of Driver API calls from the core to the driver, by RPC and gRPC status code.",
		Buckets: durationBuckets,
	}, []string{"method", "code"}))
	if err != nil {
		return nil, err
	}
	mcmDuration, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "mcm",
		Subsystem: "cloud_api",
		Name:      "driver_request_duration_seconds",
		Help:      "Duration of driver machine operations (MCM-compatible name).",
		Buckets:   durationBuckets,
	}, []string{"provider", "operation"}))
	if err != nil {
		return nil, err
	}
	mcmFailed, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "mcm",
		Subsystem: "cloud_api",
		Name:      "driver_requests_failed_total",
		Help:      "Number of failed driver machine operations (MCM-compatible name).",
	}, []string{"provider", "operation", "error_code"}))
	if err != nil {
		return nil, err
	}
	return &callMetrics{duration: duration, mcmDuration: mcmDuration, mcmFailed: mcmFailed}, nil
}

// register registers c, or returns the identical collector that is already
// registered: every Client of a process (and every test) shares the same
// metric families.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}

// observe records one finished RPC.
func (m *callMetrics) observe(rpc, provider string, code codes.Code, d time.Duration) {
	m.duration.WithLabelValues(rpc, code.String()).Observe(d.Seconds())
	op, ok := mcmOperations[rpc]
	if !ok {
		return
	}
	m.mcmDuration.WithLabelValues(provider, op).Observe(d.Seconds())
	if code != codes.OK {
		m.mcmFailed.WithLabelValues(provider, op, strconv.Itoa(int(code))).Inc()
	}
}
