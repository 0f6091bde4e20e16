package driver

import (
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Default timeouts of the driver calls. The manager exposes them as
// --driver-create-timeout, --driver-delete-timeout, --driver-status-timeout,
// --driver-list-timeout and --driver-call-timeout.
const (
	DefaultCreateTimeout = 5 * time.Minute
	DefaultDeleteTimeout = 5 * time.Minute
	DefaultStatusTimeout = time.Minute
	DefaultListTimeout   = 2 * time.Minute
	DefaultCallTimeout   = time.Minute

	// defaultProbeTimeout bounds one Probe call, both while Connect waits
	// for the driver to become ready and in Ready (the manager's /readyz).
	defaultProbeTimeout = 5 * time.Second
	// defaultProbeInterval is the pause between two probes of a driver
	// that is not ready yet.
	defaultProbeInterval = time.Second
	// defaultWaitLogInterval is how often Connect reports that it is still
	// waiting for the driver.
	defaultWaitLogInterval = 10 * time.Second
)

// Options configures a Client. A zero field takes its default.
type Options struct {
	// CreateTimeout bounds one CreateMachine call.
	CreateTimeout time.Duration
	// DeleteTimeout bounds one DeleteMachine call.
	DeleteTimeout time.Duration
	// StatusTimeout bounds one GetMachineStatus call.
	StatusTimeout time.Duration
	// ListTimeout bounds one ListMachines call.
	ListTimeout time.Duration
	// CallTimeout bounds every other call: InitializeMachine, GetVolumeIDs,
	// UpdateMachine, GetPluginInfo and GetPluginCapabilities.
	CallTimeout time.Duration
	// ProbeTimeout bounds one Probe call.
	ProbeTimeout time.Duration
	// ProbeInterval is the pause between probes while Connect waits for a
	// driver that is not ready.
	ProbeInterval time.Duration
	// WaitLogInterval is how often Connect logs that it is still waiting.
	WaitLogInterval time.Duration

	// Name is the operator's name for the driver (the name of
	// --driver-endpoint name=unix:///...): the "driver" label of the
	// client's metrics, the "driver" field of its log lines and the name of
	// its readiness check. Empty: the name the driver gives itself in
	// GetPluginInfo.
	Name string

	// Logger is used when a call's context carries no logger, and for the
	// client's own messages (connect, reconnect). Default: the
	// controller-runtime root logger named "driver".
	Logger logr.Logger
	// Registerer receives the client's metrics. Default: controller-runtime's
	// metrics registry, served by the manager's metrics endpoint. Several
	// clients may share one registerer.
	Registerer prometheus.Registerer
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	setDefault(&o.CreateTimeout, DefaultCreateTimeout)
	setDefault(&o.DeleteTimeout, DefaultDeleteTimeout)
	setDefault(&o.StatusTimeout, DefaultStatusTimeout)
	setDefault(&o.ListTimeout, DefaultListTimeout)
	setDefault(&o.CallTimeout, DefaultCallTimeout)
	setDefault(&o.ProbeTimeout, defaultProbeTimeout)
	setDefault(&o.ProbeInterval, defaultProbeInterval)
	setDefault(&o.WaitLogInterval, defaultWaitLogInterval)
	if o.Logger.GetSink() == nil {
		o.Logger = ctrllog.Log.WithName("driver")
	}
	if o.Registerer == nil {
		o.Registerer = ctrlmetrics.Registry
	}
	return o
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}
