package driver

import (
	"errors"
	"strconv"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
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
// counterpart and are measured only in the gRPC client metrics.
var mcmOperations = map[string]string{
	"CreateMachine":     "create_machine",
	"InitializeMachine": "initialize_machine",
	"DeleteMachine":     "delete_machine",
	"GetMachineStatus":  "get_machine_status",
	"ListMachines":      "list_machine",
	"GetVolumeIDs":      "get_volume_ids",
}

// clientMetrics are the client's Prometheus metrics, one collector so that
// it is registered in one step:
//   - go-grpc-middleware's client metrics, which dashboards for any gRPC
//     client understand: grpc_client_started_total,
//     grpc_client_handled_total{grpc_code}, grpc_client_msg_sent_total,
//     grpc_client_msg_received_total and the histogram
//     grpc_client_handling_seconds, by grpc_service and grpc_method, for
//     every RPC identity calls included;
//   - MCM's two, the names MCM users scrape, for MachineService RPCs:
//     mcm_cloud_api_driver_request_duration_seconds{provider,operation} and
//     mcm_cloud_api_driver_requests_failed_total{provider,operation,error_code},
//     error_code being the numeric gRPC code, as in MCM.
type clientMetrics struct {
	grpc        *grpcprom.ClientMetrics
	mcmDuration *prometheus.HistogramVec
	mcmFailed   *prometheus.CounterVec
}

func newClientMetrics() *clientMetrics {
	return &clientMetrics{
		grpc: grpcprom.NewClientMetrics(grpcprom.WithClientHandlingTimeHistogram(grpcprom.WithHistogramBuckets(durationBuckets))),
		mcmDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "mcm",
			Subsystem: "cloud_api",
			Name:      "driver_request_duration_seconds",
			Help:      "Duration of driver machine operations (MCM-compatible name).",
			Buckets:   durationBuckets,
		}, []string{"provider", "operation"}),
		mcmFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcm",
			Subsystem: "cloud_api",
			Name:      "driver_requests_failed_total",
			Help:      "Number of failed driver machine operations (MCM-compatible name).",
		}, []string{"provider", "operation", "error_code"}),
	}
}

// registerClientMetrics registers the client's metrics with reg. Every
// Client of a process (and every test) shares one set per registry: when an
// identical collector is registered already, it is used instead, as
// prometheus.AlreadyRegisteredError suggests.
func registerClientMetrics(reg prometheus.Registerer) (*clientMetrics, error) {
	m := newClientMetrics()
	err := reg.Register(m)
	if err == nil {
		return m, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(*clientMetrics); ok {
			return existing, nil
		}
	}
	return nil, err
}

// Describe implements prometheus.Collector.
func (m *clientMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.grpc.Describe(ch)
	m.mcmDuration.Describe(ch)
	m.mcmFailed.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *clientMetrics) Collect(ch chan<- prometheus.Metric) {
	m.grpc.Collect(ch)
	m.mcmDuration.Collect(ch)
	m.mcmFailed.Collect(ch)
}

// observeMCM records one finished RPC in MCM's metrics, if MCM has a name
// for it.
func (m *clientMetrics) observeMCM(rpc, provider string, code codes.Code, d time.Duration) {
	op, ok := mcmOperations[rpc]
	if !ok {
		return
	}
	m.mcmDuration.WithLabelValues(provider, op).Observe(d.Seconds())
	if code != codes.OK {
		m.mcmFailed.WithLabelValues(provider, op, strconv.Itoa(int(code))).Inc()
	}
}
