package manager

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"

	"github.com/machina-io/machina/core/internal/controller/classupdate"
	"github.com/machina-io/machina/core/internal/controller/machine"
	"github.com/machina-io/machina/core/internal/controller/mcgc"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/meltdown"
	"github.com/machina-io/machina/core/nodeconfig"
)

// Driver endpoint: the environment variable and the default of the Driver
// API (docs/driver-api.md), the same for the core and every driver.
const (
	DriverEndpointEnv     = "MACHINA_DRIVER_ENDPOINT"
	DefaultDriverEndpoint = "unix:///var/run/machina/driver.sock"
)

// Special kubeconfig values MCM accepts, kept so that MCM deployments carry
// over: "inClusterConfig" for the control cluster means in-cluster (as an
// empty value does), "none" for the target cluster runs without one.
const (
	InClusterKubeconfig = "inClusterConfig"
	NoTargetKubeconfig  = "none"
)

// LeaderElectionID is the name of the Lease the replicas compete for.
const LeaderElectionID = "machina-manager"

// Options configure a Manager. Every field but Logger, ControlConfig and
// TargetConfig is a flag of the machina-manager binary (AddFlags), under
// MCM's name where MCM has the same knob. DefaultOptions holds the
// defaults; docs/operating.md explains each.
type Options struct {
	// ControlKubeconfig (--control-kubeconfig) is the kubeconfig of the
	// control cluster, where the Machine objects and their Secrets live.
	// Empty (or "inClusterConfig"): the pod's in-cluster configuration.
	ControlKubeconfig string
	// TargetKubeconfig (--target-kubeconfig) is the kubeconfig of the
	// target cluster, where the Nodes, Pods and volumes live. Empty: the
	// control cluster. "none": no target cluster (machines become Available
	// once their VM exists; nothing is drained).
	TargetKubeconfig string
	// ControlConfig and TargetConfig, when set, are used instead of the
	// kubeconfig files (for tests and embedding). TargetConfig nil with
	// TargetKubeconfig empty means the control cluster.
	ControlConfig *rest.Config
	TargetConfig  *rest.Config

	// Namespace (--namespace) holds the Machines, MachineClasses,
	// MachineSets, MachineDeployments and Secrets this manager handles; it
	// watches nothing of those kinds elsewhere.
	Namespace string

	// KubeAPIQPS and KubeAPIBurst (--kube-api-qps, --kube-api-burst) bound
	// the requests to each cluster's API server, shared by all controllers.
	KubeAPIQPS   float32
	KubeAPIBurst int
	// ConcurrentSyncs (--concurrent-syncs) is the number of workers of each
	// controller.
	ConcurrentSyncs int
	// MinResyncPeriod (--min-resync-period) is how often the informers
	// resync their whole cache (controller-runtime jitters it).
	MinResyncPeriod time.Duration

	// LeaderElect (--leader-elect) runs the controllers only in the replica
	// that holds the Lease LeaderElectionID.
	LeaderElect bool
	// LeaderElectLeaseDuration, LeaderElectRenewDeadline and
	// LeaderElectRetryPeriod (--leader-elect-lease-duration,
	// --leader-elect-renew-deadline, --leader-elect-retry-period) tune the
	// election as in every Kubernetes controller manager.
	LeaderElectLeaseDuration time.Duration
	LeaderElectRenewDeadline time.Duration
	LeaderElectRetryPeriod   time.Duration
	// LeaderElectResourceNamespace (--leader-elect-resource-namespace) holds
	// the Lease; empty means Namespace.
	LeaderElectResourceNamespace string

	// MetricsBindAddress (--metrics-bind-address) serves /metrics and
	// /configz (and /debug/pprof with Profiling); "0" turns it off.
	MetricsBindAddress string
	// MetricsSecure (--metrics-secure, on by default) serves the metrics
	// server over HTTPS and answers only a request whose bearer token the
	// control cluster's API server authenticates (TokenReview) and
	// authorizes for a get of the path (SubjectAccessReview). Off, it
	// serves plain HTTP to anyone who reaches the address: for local runs.
	MetricsSecure bool
	// MetricsCertDir (--metrics-cert-dir) holds the metrics server's
	// tls.crt and tls.key, read again when they change; empty means a
	// self-signed certificate made at start.
	MetricsCertDir string
	// HealthProbeBindAddress (--health-probe-bind-address) serves /healthz
	// and /readyz; "0" turns it off.
	HealthProbeBindAddress string
	// Profiling (--profiling) serves Go's pprof handlers under /debug/pprof/
	// on the metrics server.
	Profiling bool

	// NodeConfigBindAddress (--node-config-bind-address) serves the node
	// agents their rendered MachineConfigs over HTTPS (core/nodeconfig);
	// "0" turns it off, and then agents must read MachineConfigs from the
	// API server themselves.
	NodeConfigBindAddress string
	// NodeConfigNames (--node-config-names) are the DNS names and IP
	// addresses in the server's certificate: those the agents reach it by.
	NodeConfigNames []string
	// NodeConfigCA (--node-config-ca-configmap, namespace/name) is the
	// ConfigMap of the target cluster where each replica publishes its
	// certificate for the agents to trust.
	NodeConfigCA string

	// DriverEndpoint (--driver-endpoint, env MACHINA_DRIVER_ENDPOINT) is the
	// driver's socket, unix:///path (or tcp://host:port for development),
	// when the manager has one driver, which serves every provider.
	DriverEndpoint string
	// DriverEndpoints (--driver-endpoint name=unix:///path, repeated) are
	// the drivers of a manager with several, each serving the providers
	// it lists (driverendpoints.go). Set, DriverEndpoint must be empty.
	DriverEndpoints []DriverEndpoint
	// Timeouts of one driver call of each kind (--driver-create-timeout,
	// --driver-delete-timeout, --driver-status-timeout,
	// --driver-list-timeout, --driver-call-timeout for every other RPC).
	DriverCreateTimeout time.Duration
	DriverDeleteTimeout time.Duration
	DriverStatusTimeout time.Duration
	DriverListTimeout   time.Duration
	DriverCallTimeout   time.Duration

	// Machine lifecycle (MCM's machine-controller flags).
	MachineCreationTimeout        time.Duration // --machine-creation-timeout
	MachineHealthTimeout          time.Duration // --machine-health-timeout
	MachineDrainTimeout           time.Duration // --machine-drain-timeout
	MachineInPlaceUpdateTimeout   time.Duration // --machine-inplace-update-timeout
	MachinePreserveTimeout        time.Duration // --machine-preserve-timeout
	MachineMaxEvictRetries        int           // --machine-max-evict-retries
	MachinePVDetachTimeout        time.Duration // --machine-pv-detach-timeout
	MachinePVReattachTimeout      time.Duration // --machine-pv-reattach-timeout
	NodeConditions                []string      // --node-conditions
	BootstrapTokenAuthExtraGroups []string      // --bootstrap-token-auth-extra-groups
	ResourceExhaustedRetry        time.Duration // --resource-exhausted-retry
	// MachineVMStatusCheckPeriod (--machine-vm-statuscheck-period) is how
	// often, without a target cluster, the Machine controller asks the
	// driver whether an Available machine's VM still exists; 0 turns the
	// check off. With a target cluster the Node tells, and it never runs.
	MachineVMStatusCheckPeriod time.Duration
	// MachineMaxReplacements (--machine-max-replacements) is how many
	// machines of one MachineDeployment may be failed by the health timeout
	// at a time: a count ("1", MCM's fixed value) or a percentage of the
	// deployment's replicas ("10%"). The Machine controller consults it through
	// a meltdown.Guard.
	MachineMaxReplacements string
	// ClassUpdateMaxConcurrent (--class-update-max-concurrent) is how many
	// machines of one MachineClass the class update controller updates at a
	// time through the driver's UpdateMachine after the class changed; 0
	// turns class updates off (machines keep their VMs as created, as with
	// a driver without the capability).
	ClassUpdateMaxConcurrent int

	// Machine sets and deployments (MCM's machine-controller-manager flags).
	AutoscalerScaleDownAnnotationDuringRollout bool // --autoscaler-scaledown-annotation-during-rollout

	// Safety (MCM's flags): overshoot freeze, orphan VM collection, API
	// server check (docs/operating.md).
	SafetyUp                                 int           // --safety-up
	SafetyDown                               int           // --safety-down
	MachineSafetyOvershootingPeriod          time.Duration // --machine-safety-overshooting-period
	MachineSafetyOrphanVMsPeriod             time.Duration // --machine-safety-orphan-vms-period
	MachineSafetyAPIServerStatusCheckPeriod  time.Duration // --machine-safety-apiserver-statuscheck-period
	MachineSafetyAPIServerStatusCheckTimeout time.Duration // --machine-safety-apiserver-statuscheck-timeout

	// MachineConfigGCGrace (--machine-config-gc-grace) is how long a
	// rendered MachineConfig no pool and no Node refers to is kept before
	// it is deleted.
	MachineConfigGCGrace time.Duration

	// Logger is the manager's logger; the controller-runtime root logger
	// (ctrl.Log) when unset.
	Logger logr.Logger

	// skipNameValidation lets tests of this package run several managers,
	// whose controllers share names, in one process.
	skipNameValidation bool
	// failOnUninformedReads makes a read of a kind without an informer
	// fail instead of starting one (cache.Options'
	// ReaderFailOnMissingInformer) and records it (uninformedReads):
	// tests that run the whole manager check with it that every kind a
	// controller reads is informed from the start, not on its first read.
	failOnUninformedReads bool
}

// Defaults that differ from MCM's, and why (docs/operating.md has the long
// form).
const (
	// DefaultKubeAPIQPS and DefaultKubeAPIBurst are measured (make bench,
	// docs/performance.md): a machine costs about nine requests from its
	// creation to Running (five Machine and Node writes, the bootstrap
	// token's create and delete, two events), so at 100 requests per second
	// a scale-up of a thousand machines waited on this limiter alone for a
	// minute (63 s, half a second per request) and at 400 took 23 s. The
	// API server's priority and fairness still protects it; lower the
	// flags where the manager shares a small API server. MCM's 20/30
	// throttled large clusters (MCM issue #703; Gardener runs MCM with
	// 150/200).
	DefaultKubeAPIQPS   = 400
	DefaultKubeAPIBurst = 600
	// DefaultConcurrentSyncs is MCM's machine-controller value. A worker of
	// the Machine controller is held for the whole of a driver call (a
	// create may take a minute at a cloud); drains do not hold one here.
	// Fifty workers let fifty creates run at once, and cost nothing for the
	// lighter controllers.
	DefaultConcurrentSyncs = 50
)

// DefaultOptions returns the defaults of every flag.
func DefaultOptions() Options {
	return Options{
		Namespace:       "default",
		KubeAPIQPS:      DefaultKubeAPIQPS,
		KubeAPIBurst:    DefaultKubeAPIBurst,
		ConcurrentSyncs: DefaultConcurrentSyncs,
		MinResyncPeriod: 12 * time.Hour,

		LeaderElect:              true,
		LeaderElectLeaseDuration: 15 * time.Second,
		LeaderElectRenewDeadline: 10 * time.Second,
		LeaderElectRetryPeriod:   2 * time.Second,

		MetricsBindAddress:     ":10259",
		MetricsSecure:          true,
		HealthProbeBindAddress: ":10258",
		NodeConfigBindAddress:  "0",
		NodeConfigNames:        []string{"localhost", "127.0.0.1"},
		NodeConfigCA:           nodeconfig.DefaultCAConfigMap,

		DriverEndpoint:      DefaultDriverEndpoint,
		DriverCreateTimeout: driver.DefaultCreateTimeout,
		DriverDeleteTimeout: driver.DefaultDeleteTimeout,
		DriverStatusTimeout: driver.DefaultStatusTimeout,
		DriverListTimeout:   driver.DefaultListTimeout,
		DriverCallTimeout:   driver.DefaultCallTimeout,

		MachineCreationTimeout:      machine.DefaultCreationTimeout,
		MachineHealthTimeout:        machine.DefaultHealthTimeout,
		MachineDrainTimeout:         machine.DefaultDrainTimeout,
		MachineInPlaceUpdateTimeout: machine.DefaultInPlaceUpdateTimeout,
		MachinePreserveTimeout:      machine.DefaultPreserveTimeout,
		MachineMaxEvictRetries:      360,
		MachinePVDetachTimeout:      2 * time.Minute,
		MachinePVReattachTimeout:    90 * time.Second,
		NodeConditions:              append([]string(nil), machine.DefaultNodeConditions...),
		ResourceExhaustedRetry:      machine.DefaultResourceExhaustedRetry,
		MachineVMStatusCheckPeriod:  machine.DefaultVMStatusCheckPeriod,
		MachineMaxReplacements:      meltdown.DefaultMaxReplacements,
		ClassUpdateMaxConcurrent:    classupdate.DefaultMaxConcurrent,

		AutoscalerScaleDownAnnotationDuringRollout: true,

		SafetyUp:                                 2,
		SafetyDown:                               1,
		MachineSafetyOvershootingPeriod:          time.Minute,
		MachineSafetyOrphanVMsPeriod:             15 * time.Minute,
		MachineSafetyAPIServerStatusCheckPeriod:  time.Minute,
		MachineSafetyAPIServerStatusCheckTimeout: 30 * time.Second,
		MachineConfigGCGrace:                     mcgc.DefaultGrace,
	}
}

// Validate reports every invalid option at once.
func (o *Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		bad("--namespace %q: %s", o.Namespace, strings.Join(msgs, "; "))
	}
	if o.LeaderElectResourceNamespace != "" {
		if msgs := validation.IsDNS1123Label(o.LeaderElectResourceNamespace); len(msgs) > 0 {
			bad("--leader-elect-resource-namespace %q: %s", o.LeaderElectResourceNamespace, strings.Join(msgs, "; "))
		}
	}
	if o.KubeAPIQPS <= 0 {
		bad("--kube-api-qps must be positive, got %v", o.KubeAPIQPS)
	}
	if o.KubeAPIBurst < 1 {
		bad("--kube-api-burst must be at least 1, got %d", o.KubeAPIBurst)
	}
	if o.ConcurrentSyncs < 1 {
		bad("--concurrent-syncs must be at least 1, got %d", o.ConcurrentSyncs)
	}
	o.validateDriverEndpoints(bad)
	if _, err := o.nodeConfigCA(); err != nil {
		bad("%v", err)
	}
	positive := map[string]time.Duration{
		"--min-resync-period":                            o.MinResyncPeriod,
		"--machine-config-gc-grace":                      o.MachineConfigGCGrace,
		"--driver-create-timeout":                        o.DriverCreateTimeout,
		"--driver-delete-timeout":                        o.DriverDeleteTimeout,
		"--driver-status-timeout":                        o.DriverStatusTimeout,
		"--driver-list-timeout":                          o.DriverListTimeout,
		"--driver-call-timeout":                          o.DriverCallTimeout,
		"--machine-creation-timeout":                     o.MachineCreationTimeout,
		"--machine-health-timeout":                       o.MachineHealthTimeout,
		"--machine-drain-timeout":                        o.MachineDrainTimeout,
		"--machine-inplace-update-timeout":               o.MachineInPlaceUpdateTimeout,
		"--machine-preserve-timeout":                     o.MachinePreserveTimeout,
		"--machine-pv-detach-timeout":                    o.MachinePVDetachTimeout,
		"--machine-pv-reattach-timeout":                  o.MachinePVReattachTimeout,
		"--resource-exhausted-retry":                     o.ResourceExhaustedRetry,
		"--machine-safety-overshooting-period":           o.MachineSafetyOvershootingPeriod,
		"--machine-safety-orphan-vms-period":             o.MachineSafetyOrphanVMsPeriod,
		"--machine-safety-apiserver-statuscheck-period":  o.MachineSafetyAPIServerStatusCheckPeriod,
		"--machine-safety-apiserver-statuscheck-timeout": o.MachineSafetyAPIServerStatusCheckTimeout,
	}
	if o.LeaderElect {
		positive["--leader-elect-lease-duration"] = o.LeaderElectLeaseDuration
		positive["--leader-elect-renew-deadline"] = o.LeaderElectRenewDeadline
		positive["--leader-elect-retry-period"] = o.LeaderElectRetryPeriod
	}
	for _, name := range sortedKeys(positive) {
		if positive[name] <= 0 {
			bad("%s must be positive, got %v", name, positive[name])
		}
	}
	if o.LeaderElect && o.LeaderElectLeaseDuration <= o.LeaderElectRenewDeadline {
		bad("--leader-elect-lease-duration (%v) must be longer than --leader-elect-renew-deadline (%v)",
			o.LeaderElectLeaseDuration, o.LeaderElectRenewDeadline)
	}
	if o.LeaderElect && o.LeaderElectRenewDeadline <= o.LeaderElectRetryPeriod {
		bad("--leader-elect-renew-deadline (%v) must be longer than --leader-elect-retry-period (%v)",
			o.LeaderElectRenewDeadline, o.LeaderElectRetryPeriod)
	}
	if o.MachineVMStatusCheckPeriod < 0 {
		bad("--machine-vm-statuscheck-period must not be negative (0 turns the check off), got %v", o.MachineVMStatusCheckPeriod)
	}
	if o.ClassUpdateMaxConcurrent < 0 {
		bad("--class-update-max-concurrent must not be negative (0 turns class updates off), got %d", o.ClassUpdateMaxConcurrent)
	}
	if o.MachineMaxEvictRetries < 0 {
		bad("--machine-max-evict-retries must not be negative, got %d", o.MachineMaxEvictRetries)
	}
	if o.SafetyUp < 0 || o.SafetyDown < 0 || o.SafetyUp > math.MaxInt32 || o.SafetyDown > math.MaxInt32 {
		bad("--safety-up and --safety-down must be between 0 and %d, got %d and %d", math.MaxInt32, o.SafetyUp, o.SafetyDown)
	}
	if o.MachineSafetyAPIServerStatusCheckPeriod < o.MachineSafetyAPIServerStatusCheckTimeout {
		// MCM's rule: a check must end before the next one starts.
		bad("--machine-safety-apiserver-statuscheck-period (%v) must not be shorter than --machine-safety-apiserver-statuscheck-timeout (%v)",
			o.MachineSafetyAPIServerStatusCheckPeriod, o.MachineSafetyAPIServerStatusCheckTimeout)
	}
	if _, err := meltdown.ParseLimit(o.MachineMaxReplacements); err != nil {
		bad("--%s: %v", meltdown.FlagName, err)
	}
	for _, c := range o.NodeConditions {
		if c == "" {
			bad("--node-conditions has an empty entry")
		}
	}
	return errors.Join(errs...)
}

// vmStatusCheckPeriod is --machine-vm-statuscheck-period as the Machine
// controller takes it: negative for off.
func (o *Options) vmStatusCheckPeriod() time.Duration {
	if o.MachineVMStatusCheckPeriod == 0 {
		return -1
	}
	return o.MachineVMStatusCheckPeriod
}

// leaderElectionNamespace is where the Lease lives.
func (o *Options) leaderElectionNamespace() string {
	if o.LeaderElectResourceNamespace != "" {
		return o.LeaderElectResourceNamespace
	}
	return o.Namespace
}

// hasTarget reports whether the manager runs with a target cluster.
func (o *Options) hasTarget() bool {
	return o.TargetKubeconfig != NoTargetKubeconfig
}

func sortedKeys(m map[string]time.Duration) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
