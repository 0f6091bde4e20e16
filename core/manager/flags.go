package manager

import (
	"flag"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/machina-io/machina/core/internal/meltdown"
)

// AddFlags registers every option as a flag on fs, with o's current values
// as defaults (start from DefaultOptions). Names are MCM's where MCM has the
// same knob. The driver endpoint defaults to $MACHINA_DRIVER_ENDPOINT when
// that is set; the flag wins over the variable.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.ControlKubeconfig, "control-kubeconfig", o.ControlKubeconfig,
		`kubeconfig of the control cluster (Machines, classes, secrets); empty or "inClusterConfig": in-cluster configuration`)
	fs.StringVar(&o.TargetKubeconfig, "target-kubeconfig", o.TargetKubeconfig,
		`kubeconfig of the target cluster (Nodes, Pods, volumes); empty: the control cluster; "none": no target cluster`)
	fs.StringVar(&o.Namespace, "namespace", o.Namespace,
		"namespace of the machine objects (Machines, MachineClasses, MachineSets, MachineDeployments, Secrets) in the control cluster")
	fs.Var((*float32Value)(&o.KubeAPIQPS), "kube-api-qps", "requests per second to each API server, shared by all controllers")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "burst of requests to each API server above --kube-api-qps")
	fs.IntVar(&o.ConcurrentSyncs, "concurrent-syncs", o.ConcurrentSyncs, "workers of each controller")
	fs.DurationVar(&o.MinResyncPeriod, "min-resync-period", o.MinResyncPeriod, "period of the informers' full resync")

	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"run the controllers only in the replica that holds the Lease "+LeaderElectionID)
	fs.DurationVar(&o.LeaderElectLeaseDuration, "leader-elect-lease-duration", o.LeaderElectLeaseDuration,
		"how long non-leaders wait after the last renewal before taking the lease over")
	fs.DurationVar(&o.LeaderElectRenewDeadline, "leader-elect-renew-deadline", o.LeaderElectRenewDeadline,
		"how long the leader keeps trying to renew before it gives up leadership")
	fs.DurationVar(&o.LeaderElectRetryPeriod, "leader-elect-retry-period", o.LeaderElectRetryPeriod,
		"pause between two attempts to acquire or renew the lease")
	fs.StringVar(&o.LeaderElectResourceNamespace, "leader-elect-resource-namespace", o.LeaderElectResourceNamespace,
		"namespace of the lease (default: --namespace)")

	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", o.MetricsBindAddress,
		`address of the metrics server (/metrics, /configz; /debug/pprof/ with --profiling); "0" turns it off`)
	fs.BoolVar(&o.MetricsSecure, "metrics-secure", o.MetricsSecure,
		"serve the metrics server over HTTPS to requests the control cluster authenticates and authorizes "+
			"(a bearer token allowed to get /metrics); false serves plain HTTP to anyone, for local use")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", o.MetricsCertDir,
		"directory of the metrics server's tls.crt and tls.key (default: a self-signed certificate)")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", o.HealthProbeBindAddress,
		`address of the health server (/healthz, /readyz); "0" turns it off`)
	fs.BoolVar(&o.Profiling, "profiling", o.Profiling, "serve Go's pprof handlers under /debug/pprof/ on the metrics server")
	fs.StringVar(&o.NodeConfigBindAddress, "node-config-bind-address", o.NodeConfigBindAddress,
		`address of the HTTPS server that gives each node agent its own Node's rendered MachineConfigs; "0" turns it off`)
	fs.Func("node-config-names", "comma-separated DNS names and IP addresses of the node configuration server's certificate "+
		"(default "+strings.Join(o.NodeConfigNames, ",")+")", func(v string) error {
		o.NodeConfigNames = strings.Split(v, ",")
		return nil
	})
	fs.StringVar(&o.NodeConfigCA, "node-config-ca-configmap", o.NodeConfigCA,
		"namespace/name of the target cluster's ConfigMap where the node configuration server publishes its certificate, "+
			"which the agents trust")

	endpoint := o.DriverEndpoint
	if v, ok := os.LookupEnv(DriverEndpointEnv); ok && v != "" {
		endpoint = v
	}
	o.DriverEndpoint = endpoint
	fs.Var(&driverEndpointsFlag{o: o}, "driver-endpoint",
		"Driver API endpoint, unix:///path/to/socket (tcp://host:port for development only): the one driver, serving every provider; "+
			"or name=unix:///path, repeated, one per driver, each serving the providers it lists; default from $"+DriverEndpointEnv)
	fs.DurationVar(&o.DriverCreateTimeout, "driver-create-timeout", o.DriverCreateTimeout, "timeout of one CreateMachine call")
	fs.DurationVar(&o.DriverDeleteTimeout, "driver-delete-timeout", o.DriverDeleteTimeout, "timeout of one DeleteMachine call")
	fs.DurationVar(&o.DriverStatusTimeout, "driver-status-timeout", o.DriverStatusTimeout, "timeout of one GetMachineStatus call")
	fs.DurationVar(&o.DriverListTimeout, "driver-list-timeout", o.DriverListTimeout, "timeout of one ListMachines call")
	fs.DurationVar(&o.DriverCallTimeout, "driver-call-timeout", o.DriverCallTimeout,
		"timeout of every other driver call (InitializeMachine, GetVolumeIDs, identity)")

	fs.DurationVar(&o.MachineCreationTimeout, "machine-creation-timeout", o.MachineCreationTimeout,
		"time from a Machine's creation until its Node must have joined; later the machine is Failed")
	fs.DurationVar(&o.MachineHealthTimeout, "machine-health-timeout", o.MachineHealthTimeout,
		"how long a joined machine may be unhealthy (Unknown) before it is Failed")
	fs.DurationVar(&o.MachineDrainTimeout, "machine-drain-timeout", o.MachineDrainTimeout,
		"how long from deletion a Node is drained gracefully before the drain is forced")
	fs.DurationVar(&o.MachineInPlaceUpdateTimeout, "machine-inplace-update-timeout", o.MachineInPlaceUpdateTimeout,
		"how long, from the go signal, a node's agent may take to update the node in place before the machine is InPlaceUpdateFailed")
	fs.DurationVar(&o.MachinePreserveTimeout, "machine-preserve-timeout", o.MachinePreserveTimeout,
		"how long a machine asked to be preserved (annotation node.machine.sapcloud.io/preserve) is kept; spec.machinePreserveTimeout wins")
	fs.IntVar(&o.MachineMaxEvictRetries, "machine-max-evict-retries", o.MachineMaxEvictRetries,
		"retries (of 20s, MCM's interval) an eviction refused by a PodDisruptionBudget gets before the drain reports itself Failed; the drain goes on until --machine-drain-timeout forces it; spec.maxEvictRetries wins")
	fs.DurationVar(&o.MachinePVDetachTimeout, "machine-pv-detach-timeout", o.MachinePVDetachTimeout,
		"how long a drain waits for the volumes of one evicted pod to detach before it goes on")
	fs.DurationVar(&o.MachinePVReattachTimeout, "machine-pv-reattach-timeout", o.MachinePVReattachTimeout,
		"after the CSI volumes of an evicted pod detached, how long the drain waits for them to be attached to another node before it evicts the next pod with volumes; 0: no such wait")
	fs.Var((*listValue)(&o.NodeConditions), "node-conditions",
		"comma-separated node condition types that make a machine unhealthy when True")
	fs.Var((*listValue)(&o.BootstrapTokenAuthExtraGroups), "bootstrap-token-auth-extra-groups",
		"comma-separated groups added to the bootstrap tokens of new machines")
	fs.StringVar(&o.MachineMaxReplacements, meltdown.FlagName, o.MachineMaxReplacements,
		"machines of one MachineDeployment the health timeout may fail at a time, a count or a percentage of replicas (\"10%\")")
	fs.DurationVar(&o.ResourceExhaustedRetry, "resource-exhausted-retry", o.ResourceExhaustedRetry,
		"retry period after a create failed with RESOURCE_EXHAUSTED (no capacity or quota)")
	fs.DurationVar(&o.MachineVMStatusCheckPeriod, "machine-vm-statuscheck-period", o.MachineVMStatusCheckPeriod,
		"without a target cluster (--target-kubeconfig=none): how often each Available machine's VM is looked up, a machine whose VM is gone is replaced through the health timeout; 0: never")
	fs.IntVar(&o.ClassUpdateMaxConcurrent, "class-update-max-concurrent", o.ClassUpdateMaxConcurrent,
		"after a MachineClass changed, how many of its machines are updated at a time through the driver's UpdateMachine (drivers with the capability only); 0: class changes reach existing VMs only by a rollout")

	fs.BoolVar(&o.AutoscalerScaleDownAnnotationDuringRollout, "autoscaler-scaledown-annotation-during-rollout",
		o.AutoscalerScaleDownAnnotationDuringRollout,
		"keep the cluster-autoscaler from scaling down the nodes of a MachineDeployment while it rolls out")

	fs.IntVar(&o.SafetyUp, "safety-up", o.SafetyUp,
		"overshoot freeze: a MachineSet freezes at 2*replicas+safety-up machines (deployment's sets: replicas+maxSurge+safety-up)")
	fs.IntVar(&o.SafetyDown, "safety-down", o.SafetyDown, "overshoot freeze: a frozen MachineSet thaws at safety-down machines below the freeze limit")
	fs.DurationVar(&o.MachineSafetyOvershootingPeriod, "machine-safety-overshooting-period", o.MachineSafetyOvershootingPeriod,
		"period of the overshoot check (it also runs whenever a machine appears or goes)")
	fs.DurationVar(&o.MachineSafetyOrphanVMsPeriod, "machine-safety-orphan-vms-period", o.MachineSafetyOrphanVMsPeriod,
		"period of the orphan VM collection (VMs the driver lists for a class whose Machine is gone)")
	fs.DurationVar(&o.MachineSafetyAPIServerStatusCheckPeriod, "machine-safety-apiserver-statuscheck-period",
		o.MachineSafetyAPIServerStatusCheckPeriod, "period of the API server reachability check")
	fs.DurationVar(&o.MachineSafetyAPIServerStatusCheckTimeout, "machine-safety-apiserver-statuscheck-timeout",
		o.MachineSafetyAPIServerStatusCheckTimeout, "how long an API server may be unreachable before the freeze")

	fs.DurationVar(&o.MachineConfigGCGrace, "machine-config-gc-grace", o.MachineConfigGCGrace,
		"how long a rendered MachineConfig that no MachineConfigPool and no Node refers to is kept before it is deleted")
}

// float32Value is a flag.Value for a float32.
type float32Value float32

func (v *float32Value) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 32) }

func (v *float32Value) Set(s string) error {
	f, err := strconv.ParseFloat(s, 32)
	if err != nil {
		return err
	}
	// ParseFloat takes "NaN" and "Inf"; neither is a rate, and NaN would
	// pass every later range check (all comparisons with NaN are false).
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%q is not a finite number", s)
	}
	*v = float32Value(f)
	return nil
}

// listValue is a flag.Value for a comma-separated list. Setting it replaces
// the default rather than appending to it, so that --node-conditions=X
// means exactly X; an empty value means an empty list.
type listValue []string

func (v *listValue) String() string { return strings.Join(*v, ",") }

func (v *listValue) Set(s string) error {
	out := []string{}
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	*v = out
	return nil
}

var (
	_ flag.Value = (*float32Value)(nil)
	_ flag.Value = (*listValue)(nil)
)
