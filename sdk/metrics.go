package sdk

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// HandlingSecondsMetric is the name of the histogram of the time the server
// took per call, labelled by method (e.g. "CreateMachine") and gRPC code
// name (e.g. "OK", "NotFound").
const HandlingSecondsMetric = "machina_driver_server_handling_seconds"

// handlingBuckets span quick identity calls up to creates that wait for a
// slow cloud API.
var handlingBuckets = []float64{.005, .025, .1, .25, .5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600}

// metrics are the server's Prometheus metrics: the go-grpc-middleware
// server metrics (grpc_server_started_total, grpc_server_handled_total),
// which dashboards for any gRPC server understand, and one histogram by
// method and code, as the Driver API's call metrics are kept everywhere.
type metrics struct {
	grpc     *grpcprom.ServerMetrics
	handling *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	grpcMetrics, err := register(reg, grpcprom.NewServerMetrics())
	if err != nil {
		return nil, err
	}
	handling, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    HandlingSecondsMetric,
		Help:    "Time the driver took to handle a Driver API call, by method and gRPC status code.",
		Buckets: handlingBuckets,
	}, []string{"method", "code"}))
	if err != nil {
		return nil, err
	}
	return &metrics{grpc: grpcMetrics, handling: handling}, nil
}

// register registers c, or returns the identical collector registered
// before: servers that share a registerer (e.g. one replaced by a new one
// in the same process) share the metric families.
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
	var zero C
	return zero, fmt.Errorf("registering metrics: %w", err)
}

// observe records the handling time of one call.
func (m *metrics) observe(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	m.handling.WithLabelValues(path.Base(info.FullMethod), status.Code(err).String()).Observe(time.Since(start).Seconds())
	return resp, err
}
