package sdk

import (
	"errors"
	"fmt"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// handlingBuckets span quick identity calls up to creates that wait for a
// slow cloud API.
var handlingBuckets = []float64{.005, .025, .1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600}

// newMetrics returns the go-grpc-middleware server metrics, which dashboards
// for any gRPC server understand: grpc_server_started_total,
// grpc_server_handled_total{grpc_code} and the handling-time histogram
// grpc_server_handling_seconds, by grpc_service and grpc_method.
//
// Servers that share a registerer (e.g. one replaced by a new one in the
// same process) share the metrics: an identical collector that is already
// registered is used instead, as prometheus.AlreadyRegisteredError suggests.
func newMetrics(reg prometheus.Registerer) (*grpcprom.ServerMetrics, error) {
	m := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram(grpcprom.WithHistogramBuckets(handlingBuckets)))
	err := reg.Register(m)
	if err == nil {
		return m, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(*grpcprom.ServerMetrics); ok {
			return existing, nil
		}
	}
	return nil, fmt.Errorf("registering metrics: %w", err)
}
