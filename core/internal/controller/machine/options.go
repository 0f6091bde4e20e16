package machine

import (
	"time"

	"k8s.io/utils/clock"

	"github.com/machina-io/machina/core/internal/drain"
	"github.com/machina-io/machina/core/internal/inplace"
)

// Defaults of Options, the values MCM ships (reference: MCM's
// machine-controller flags), so that operators can carry settings over.
const (
	DefaultCreationTimeout         = 20 * time.Minute
	DefaultHealthTimeout           = 10 * time.Minute
	DefaultDrainTimeout            = 2 * time.Hour
	DefaultShortRetry              = 5 * time.Second
	DefaultMediumRetry             = 3 * time.Minute
	DefaultLongRetry               = 10 * time.Minute
	DefaultResourceExhaustedRetry  = DefaultLongRetry
	DefaultDrainPollInterval       = 5 * time.Second
	DefaultUnreachableThreshold    = 5 * time.Minute
	DefaultMaxConcurrentReconciles = 50
	DefaultReplacementRecheck      = 30 * time.Second
	DefaultVMStatusCheckPeriod     = 5 * time.Minute
	DefaultVMStatusCheckRate       = 10
	DefaultInPlaceUpdateTimeout    = inplace.DefaultTimeout
	DefaultPreserveTimeout         = 96 * time.Hour
)

// DefaultNodeConditions are the node conditions that make a machine
// unhealthy when True (--node-conditions).
var DefaultNodeConditions = []string{"KernelDeadlock", "ReadonlyFilesystem", "DiskPressure", "NetworkUnavailable"}

// Options are the controller's knobs. A zero field takes its default;
// the per-machine fields of spec (creationTimeout, healthTimeout,
// drainTimeout, disableHealthTimeout, nodeConditions) override the
// corresponding option for one machine.
type Options struct {
	// CreationTimeout (--machine-creation-timeout) bounds the time from
	// when the controller first saw a Machine being created
	// (status.creationObservedTime) until its Node has joined; past it a
	// machine still being created becomes Failed.
	CreationTimeout time.Duration
	// HealthTimeout (--machine-health-timeout) is how long a joined machine
	// may stay unhealthy (phase Unknown) before it becomes Failed.
	HealthTimeout time.Duration
	// DrainTimeout (--machine-drain-timeout) is how long, from when the
	// controller first saw the Machine's deletion
	// (status.deletionObservedTime), the Node is drained gracefully before
	// the drain is forced.
	DrainTimeout time.Duration
	// InPlaceUpdateTimeout (--machine-inplace-update-timeout) is how long,
	// from entering InPlaceUpdating, a node's agent may take to report the
	// result of an in-place update before the machine becomes
	// InPlaceUpdateFailed.
	InPlaceUpdateTimeout time.Duration
	// PreserveTimeout (--machine-preserve-timeout) is how long a machine
	// stays preserved (machine_preserve.go) once preservation starts;
	// spec.machinePreserveTimeout overrides it per machine.
	PreserveTimeout time.Duration
	// NodeConditions (--node-conditions) are the node condition types that
	// make a machine unhealthy when True.
	NodeConditions []string
	// BootstrapTokenAuthExtraGroups (--bootstrap-token-auth-extra-groups)
	// are added to the groups of the bootstrap tokens the controller creates.
	BootstrapTokenAuthExtraGroups []string

	// ShortRetry, MediumRetry and LongRetry are the retry periods of the
	// Driver API's error tables (5s, 3m, 10m).
	ShortRetry  time.Duration
	MediumRetry time.Duration
	LongRetry   time.Duration
	// ResourceExhaustedRetry (--resource-exhausted-retry) is the retry after
	// a RESOURCE_EXHAUSTED from CreateMachine or InitializeMachine.
	ResourceExhaustedRetry time.Duration
	// PVDetachTimeout (--machine-pv-detach-timeout) bounds the wait for the
	// volumes of one evicted pod to detach from the Node before the drain
	// goes on to the next pod with volumes.
	PVDetachTimeout time.Duration
	// MaxEvictRetries (--machine-max-evict-retries) is how many retries of
	// EvictRetryInterval an eviction refused by a PodDisruptionBudget gets
	// before the drain reports itself Failed (machine_drain_blocked.go);
	// spec.maxEvictRetries of a machine overrides it.
	MaxEvictRetries int32
	// EvictRetryInterval is the length of one such retry (MCM's 20s).
	EvictRetryInterval time.Duration
	// PVReattachTimeout (--machine-pv-reattach-timeout) bounds the wait,
	// after the volumes of an evicted pod detached, for them to be attached
	// to another node before the drain evicts the next pod with volumes;
	// zero: no such wait.
	PVReattachTimeout time.Duration
	// DrainPollInterval is how often a drain runs its next pass while pods
	// remain on the Node.
	DrainPollInterval time.Duration
	// UnreachableThreshold is how long a Node may be NotReady (or report a
	// read-only filesystem) before its drain is forced (MCM: fixed 5m).
	UnreachableThreshold time.Duration

	// ReplacementRecheck is how soon a machine that the meltdown guard kept
	// from becoming Failed asks again.
	ReplacementRecheck time.Duration

	// VMStatusCheckPeriod (--machine-vm-statuscheck-period) is how often,
	// without a target cluster, the controller asks the driver whether the
	// VM of an Available (or Unknown) machine still exists
	// (machine_vmcheck.go). Negative: never.
	VMStatusCheckPeriod time.Duration
	// VMStatusCheckRate bounds those calls, in calls per second for the
	// whole controller, so that a thousand machines never burst the driver.
	VMStatusCheckRate float64

	// MaxConcurrentReconciles (--concurrent-syncs) is the number of workers.
	MaxConcurrentReconciles int

	// Clock is the controller's clock, the one its timeouts are measured
	// on (timeouts.go); the system clock when nil. Tests set one skewed
	// against the API server's.
	Clock clock.PassiveClock
}

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.CreationTimeout, DefaultCreationTimeout)
	def(&o.HealthTimeout, DefaultHealthTimeout)
	def(&o.DrainTimeout, DefaultDrainTimeout)
	def(&o.InPlaceUpdateTimeout, DefaultInPlaceUpdateTimeout)
	def(&o.PreserveTimeout, DefaultPreserveTimeout)
	def(&o.ShortRetry, DefaultShortRetry)
	def(&o.MediumRetry, DefaultMediumRetry)
	def(&o.LongRetry, DefaultLongRetry)
	def(&o.ResourceExhaustedRetry, DefaultResourceExhaustedRetry)
	def(&o.DrainPollInterval, DefaultDrainPollInterval)
	def(&o.UnreachableThreshold, DefaultUnreachableThreshold)
	def(&o.ReplacementRecheck, DefaultReplacementRecheck)
	def(&o.PVDetachTimeout, drain.DefaultDetachTimeout)
	def(&o.EvictRetryInterval, DefaultEvictRetryInterval)
	if o.MaxEvictRetries <= 0 {
		o.MaxEvictRetries = DefaultMaxEvictRetries
	}
	if o.VMStatusCheckPeriod == 0 {
		o.VMStatusCheckPeriod = DefaultVMStatusCheckPeriod
	}
	if o.VMStatusCheckRate <= 0 {
		o.VMStatusCheckRate = DefaultVMStatusCheckRate
	}
	if o.NodeConditions == nil {
		o.NodeConditions = DefaultNodeConditions
	}
	if o.MaxConcurrentReconciles <= 0 {
		o.MaxConcurrentReconciles = DefaultMaxConcurrentReconciles
	}
	return o
}
