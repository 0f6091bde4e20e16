package driver

import (
	"strconv"
	"sync"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
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
//
// Every series also carries the label driver, the client's Name: each
// driver of a manager has its own collectors, registered through
// prometheus.WrapRegistererWith.
type clientMetrics struct {
	grpc        *grpcprom.ClientMetrics
	unary       grpc.UnaryClientInterceptor
	mcmDuration *prometheus.HistogramVec
	mcmFailed   *prometheus.CounterVec
	cloudAPI    cloudAPIMetrics
}

func newClientMetrics() *clientMetrics {
	g := grpcprom.NewClientMetrics(grpcprom.WithClientHandlingTimeHistogram(grpcprom.WithHistogramBuckets(durationBuckets)))
	return &clientMetrics{
		grpc:  g,
		unary: g.UnaryClientInterceptor(),
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
		cloudAPI: newCloudAPIMetrics(),
	}
}

// registered holds the collectors registered per registry and driver name.
// Every Client of a process (and every test) with the same driver name
// shares one set per registry: a client that connects again to a driver
// already measured uses the collectors registered for it. The registry
// cannot give them back itself: the AlreadyRegisteredError of a wrapping
// registerer holds the wrapped collector.
var registered = struct {
	sync.Mutex
	sets map[registeredKey]*clientMetrics
}{sets: map[registeredKey]*clientMetrics{}}

type registeredKey struct {
	reg    prometheus.Registerer
	driver string
}

// registerClientMetrics registers m, a driver's metrics, with reg,
// labelled driver=name, or returns those registered for name before.
func registerClientMetrics(reg prometheus.Registerer, name string, m *clientMetrics) (*clientMetrics, error) {
	registered.Lock()
	defer registered.Unlock()
	key := registeredKey{reg: reg, driver: name}
	if existing, ok := registered.sets[key]; ok {
		return existing, nil
	}
	if err := prometheus.WrapRegistererWith(prometheus.Labels{"driver": name}, reg).Register(m); err != nil {
		return nil, err
	}
	registered.sets[key] = m
	return m, nil
}

// Describe implements prometheus.Collector.
func (m *clientMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.grpc.Describe(ch)
	m.mcmDuration.Describe(ch)
	m.mcmFailed.Describe(ch)
	for _, c := range m.cloudAPI.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *clientMetrics) Collect(ch chan<- prometheus.Metric) {
	m.grpc.Collect(ch)
	m.mcmDuration.Collect(ch)
	m.mcmFailed.Collect(ch)
	for _, c := range m.cloudAPI.collectors() {
		c.Collect(ch)
	}
}

// observeMCM records one finished RPC in MCM's metrics, if MCM has a name
// for it.
func (m *clientMetrics) observeMCM(rpc, provider string, code codes.Code, d time.Duration) {
	op, ok := mcmOperations[rpc]
	if !ok {
		return
	}
	m.mcmDuration.WithLabelValues(provider, op).Observe(d.Seconds())
	m.cloudAPI.observe(provider, op, code == codes.OK, d.Seconds())
	if code != codes.OK {
		m.mcmFailed.WithLabelValues(provider, op, strconv.Itoa(int(code))).Inc()
	}
}
