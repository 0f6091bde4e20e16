package virtualnode

import (
	"log/slog"
	"time"

	"k8s.io/client-go/rest"
)

// Name is the plugin name the virtualnode driver reports.
const Name = "virtualnode.driver.machina.io"

// DefaultVersion is the version reported when none is given.
const DefaultVersion = "v0.1.0-dev"

// CSIDriverName is the CSI driver whose volumes GetVolumeIDs maps.
const CSIDriverName = "virtualnode.csi.machina.io"

// ProviderIDPrefix starts the provider ID of every VM of this driver.
const ProviderIDPrefix = "virtualnode://"

// SecretKubeconfig is the request secret key that may hold the kubeconfig
// of the target cluster.
const SecretKubeconfig = "kubeconfig"

// Labels and annotations the driver puts on its Nodes.
const (
	// LabelClass holds the machine class of the Node's machine (or a hash
	// of the class name when that is not a valid label value).
	LabelClass = "virtualnode.machina.io/class"
	// LabelClassNamespace holds the namespace of the machine class: with
	// LabelClass it scopes ListMachines.
	LabelClassNamespace = "virtualnode.machina.io/class-namespace"
	// AnnotationMachine is "<namespace>/<name>" of the Node's machine.
	AnnotationMachine = "virtualnode.machina.io/machine"
	// AnnotationClassName is the machine class name, in full.
	AnnotationClassName = "virtualnode.machina.io/class-name"
	// AnnotationProviderSpecHash is the SHA-256 of the canonical provider
	// spec the Node was created with.
	AnnotationProviderSpecHash = "virtualnode.machina.io/provider-spec-hash"
	// AnnotationReadyAfter is the RFC 3339 time at which the Node is done
	// booting.
	AnnotationReadyAfter = "virtualnode.machina.io/ready-after"
	// AnnotationSimulate lists simulated failures (see the package
	// documentation).
	AnnotationSimulate = "virtualnode.machina.io/simulate"
	// AnnotationInPlaceUpdateDuration is how long a simulated in-place
	// update of the Node takes (a Go duration), from the class's provider
	// spec; without it the driver does not play the Node's agent.
	AnnotationInPlaceUpdateDuration = "virtualnode.machina.io/inplace-update-duration"
	// AnnotationInPlaceFailureRate is the probability (0 to 1) that a
	// simulated in-place update of the Node fails.
	AnnotationInPlaceFailureRate = "virtualnode.machina.io/inplace-failure-rate"
	// AnnotationMachineConfigDuration is how long the simulated writing of
	// a MachineConfig on the Node takes (a Go duration), from the class's
	// provider spec; without it the driver does not play the Node's agent
	// in the MachineConfig handshake.
	AnnotationMachineConfigDuration = "virtualnode.machina.io/machineconfig-duration"
	// AnnotationMachineConfigFailureRate is the probability (0 to 1) that a
	// simulated MachineConfig update of the Node fails.
	AnnotationMachineConfigFailureRate = "virtualnode.machina.io/machineconfig-failure-rate"
)

// DefaultHeartbeatInterval is how often the heartbeat refreshes Nodes when
// Options.HeartbeatInterval is zero. It is below the 40s grace period of
// the node lifecycle controller.
const DefaultHeartbeatInterval = 30 * time.Second

// DefaultWorkers is how many Nodes are beaten at the same time when
// Options.Workers is zero. A beat is two short requests, so 16 workers keep
// up with thousands of Nodes per heartbeat interval.
const DefaultWorkers = 16

// Default client rate limits of the driver, per target cluster. The driver
// stands for many independent kubelets, each of which has a client of its
// own (a real kubelet's allows 50 requests per second): one shared limit as
// low as a single kubelet's would throttle a thousand simulated ones.
const (
	DefaultKubeAPIQPS   = 1000
	DefaultKubeAPIBurst = 2000
)

// Options configure a Driver.
type Options struct {
	// Target is the target cluster of requests without a kubeconfig secret;
	// when nil, such requests fail with FAILED_PRECONDITION.
	Target *rest.Config
	// HeartbeatInterval is how often Run refreshes each Node;
	// DefaultHeartbeatInterval when zero.
	HeartbeatInterval time.Duration
	// WatchNodes makes Run watch the driver's Nodes: it refreshes one at
	// once when its AnnotationSimulate changes, and reads Nodes from the
	// watch's cache instead of the API server.
	WatchNodes bool
	// Workers is how many Nodes Run beats at the same time;
	// DefaultWorkers when zero.
	Workers int
	// KubeAPIQPS and KubeAPIBurst are the client rate limit towards each
	// target cluster; DefaultKubeAPIQPS and DefaultKubeAPIBurst when zero.
	// A negative KubeAPIQPS turns the limit off.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// Logger receives the driver's log lines; slog.Default() when nil.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.KubeAPIQPS == 0 {
		o.KubeAPIQPS = DefaultKubeAPIQPS
	}
	if o.KubeAPIBurst <= 0 {
		o.KubeAPIBurst = DefaultKubeAPIBurst
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}
