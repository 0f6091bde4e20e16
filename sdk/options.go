package sdk

import (
	"log/slog"
	"slices"
	"time"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Server.
type Option func(*options)

type options struct {
	logger      *slog.Logger
	hidden      map[driverv1alpha1.Capability_Type]bool
	registerer  prometheus.Registerer
	gracePeriod time.Duration
	providers   []string
}

// defaultGracePeriod bounds how long Serve waits for in-flight calls after
// its context is done. Kubernetes gives a container 30s between SIGTERM and
// SIGKILL by default; stopping a little earlier lets Serve close cleanly.
const defaultGracePeriod = 25 * time.Second

func defaultOptions() options {
	return options{
		logger:      slog.Default(),
		hidden:      map[driverv1alpha1.Capability_Type]bool{},
		registerer:  prometheus.NewRegistry(),
		gracePeriod: defaultGracePeriod,
	}
}

// WithLogger sets the logger for call logs and server events. The default is
// slog.Default(). Requests and responses are logged with their secret
// fields stripped.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// WithoutCapability hides an optional RPC the driver implements: it is not
// advertised and answers UNIMPLEMENTED without reaching the driver. A driver
// uses it to switch a capability off by configuration.
func WithoutCapability(t driverv1alpha1.Capability_Type) Option {
	return func(o *options) { o.hidden[t] = true }
}

// WithMetricsRegisterer sets where the server's metrics are registered. The
// default is a new private registry, which keeps servers (and tests) from
// colliding but is not exposed anywhere: a driver that serves metrics passes
// its own registerer, e.g. prometheus.DefaultRegisterer.
func WithMetricsRegisterer(r prometheus.Registerer) Option {
	return func(o *options) {
		if r != nil {
			o.registerer = r
		}
	}
}

// WithProviders sets the MachineClass provider values the driver serves
// (Info.Providers), for a driver that takes them from its configuration.
// A core with several drivers routes a class to the one that lists its
// provider; listing none is fine for the only driver of a core.
func WithProviders(providers ...string) Option {
	return func(o *options) { o.providers = slices.Clone(providers) }
}

// WithGracePeriod bounds how long Serve waits for in-flight calls to finish
// once its context is done, before it closes their connections (default
// 25s).
func WithGracePeriod(d time.Duration) Option {
	return func(o *options) {
		if d >= 0 {
			o.gracePeriod = d
		}
	}
}
