package manager

import (
	"flag"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

func parse(t *testing.T, args ...string) Options {
	t.Helper()
	o := DefaultOptions()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	return o
}

func TestDefaultsAreValidAndMCMs(t *testing.T) {
	t.Setenv(DriverEndpointEnv, "")
	o := parse(t)
	require.NoError(t, o.Validate())
	// MCM's defaults where MCM has the same knob.
	assert.Equal(t, "default", o.Namespace)
	assert.True(t, o.LeaderElect)
	assert.Equal(t, 15*time.Second, o.LeaderElectLeaseDuration)
	assert.Equal(t, 10*time.Second, o.LeaderElectRenewDeadline)
	assert.Equal(t, 2*time.Second, o.LeaderElectRetryPeriod)
	assert.Equal(t, 20*time.Minute, o.MachineCreationTimeout)
	assert.Equal(t, 10*time.Minute, o.MachineHealthTimeout)
	assert.Equal(t, 2*time.Hour, o.MachineDrainTimeout)
	assert.Equal(t, 20*time.Minute, o.MachineInPlaceUpdateTimeout)
	assert.Equal(t, 360, o.MachineMaxEvictRetries)
	assert.Equal(t, 2*time.Minute, o.MachinePVDetachTimeout)
	assert.Equal(t, 90*time.Second, o.MachinePVReattachTimeout)
	assert.Equal(t, []string{"KernelDeadlock", "ReadonlyFilesystem", "DiskPressure", "NetworkUnavailable"}, o.NodeConditions)
	assert.Equal(t, 10*time.Minute, o.ResourceExhaustedRetry)
	assert.Equal(t, "1", o.MachineMaxReplacements)
	assert.Equal(t, 2, o.SafetyUp)
	assert.Equal(t, 1, o.SafetyDown)
	assert.Equal(t, time.Minute, o.MachineSafetyOvershootingPeriod)
	assert.Equal(t, 15*time.Minute, o.MachineSafetyOrphanVMsPeriod)
	assert.Equal(t, time.Minute, o.MachineSafetyAPIServerStatusCheckPeriod)
	assert.Equal(t, 30*time.Second, o.MachineSafetyAPIServerStatusCheckTimeout)
	assert.True(t, o.AutoscalerScaleDownAnnotationDuringRollout)
	assert.Equal(t, 12*time.Hour, o.MinResyncPeriod)
	// machina's own.
	assert.Equal(t, DefaultDriverEndpoint, o.DriverEndpoint)
	assert.Equal(t, 5*time.Minute, o.DriverCreateTimeout)
	assert.Equal(t, 5*time.Minute, o.DriverDeleteTimeout)
	assert.Equal(t, time.Minute, o.DriverStatusTimeout)
	assert.Equal(t, 2*time.Minute, o.DriverListTimeout)
	assert.Equal(t, time.Minute, o.DriverCallTimeout)
	assert.Equal(t, float32(400), o.KubeAPIQPS)
	assert.Equal(t, 600, o.KubeAPIBurst)
	assert.Equal(t, 50, o.ConcurrentSyncs)
	assert.Equal(t, ":10259", o.MetricsBindAddress)
	assert.Equal(t, ":10258", o.HealthProbeBindAddress)
}

func TestFlagsSetOptions(t *testing.T) {
	t.Setenv(DriverEndpointEnv, "")
	o := parse(t,
		"--control-kubeconfig=/c", "--target-kubeconfig=none", "--namespace=shoot--a",
		"--kube-api-qps=12.5", "--kube-api-burst=20", "--concurrent-syncs=7",
		"--leader-elect=false", "--leader-elect-resource-namespace=kube-system",
		"--metrics-bind-address=:9000", "--health-probe-bind-address=0", "--profiling",
		"--driver-endpoint=tcp://127.0.0.1:5000", "--driver-create-timeout=7m",
		"--machine-creation-timeout=3m", "--node-conditions=A, B,,C", "--bootstrap-token-auth-extra-groups=g1,g2",
		"--resource-exhausted-retry=1m", "--autoscaler-scaledown-annotation-during-rollout=false",
		"--safety-up=4", "--machine-safety-apiserver-statuscheck-timeout=10s", "--machine-max-replacements=25%",
		"--machine-inplace-update-timeout=5m",
	)
	require.NoError(t, o.Validate())
	assert.Equal(t, "/c", o.ControlKubeconfig)
	assert.False(t, o.hasTarget())
	assert.Equal(t, "shoot--a", o.Namespace)
	assert.Equal(t, float32(12.5), o.KubeAPIQPS)
	assert.Equal(t, 20, o.KubeAPIBurst)
	assert.Equal(t, 7, o.ConcurrentSyncs)
	assert.False(t, o.LeaderElect)
	assert.Equal(t, "kube-system", o.leaderElectionNamespace())
	assert.Equal(t, ":9000", o.MetricsBindAddress)
	assert.Equal(t, "0", o.HealthProbeBindAddress)
	assert.True(t, o.Profiling)
	assert.Equal(t, "tcp://127.0.0.1:5000", o.DriverEndpoint)
	assert.Equal(t, 7*time.Minute, o.DriverCreateTimeout)
	assert.Equal(t, 3*time.Minute, o.MachineCreationTimeout)
	assert.Equal(t, 5*time.Minute, o.MachineInPlaceUpdateTimeout)
	assert.Equal(t, []string{"A", "B", "C"}, o.NodeConditions, "a list flag replaces the default")
	assert.Equal(t, []string{"g1", "g2"}, o.BootstrapTokenAuthExtraGroups)
	assert.Equal(t, time.Minute, o.ResourceExhaustedRetry)
	assert.False(t, o.AutoscalerScaleDownAnnotationDuringRollout)
	assert.Equal(t, 4, o.SafetyUp)
	assert.Equal(t, "25%", o.MachineMaxReplacements)
	assert.Equal(t, 10*time.Second, o.MachineSafetyAPIServerStatusCheckTimeout)

	empty := parse(t, "--node-conditions=")
	assert.Empty(t, empty.NodeConditions)
	assert.NotNil(t, empty.NodeConditions, "an empty list is kept, not replaced by the default")
}

// --machine-vm-statuscheck-period: 5m by default, 0 turns the VM check off
// (a negative period for the Machine controller, whose zero means the
// default), a negative value is refused.
func TestVMStatusCheckPeriodFlag(t *testing.T) {
	def := DefaultOptions()
	assert.Equal(t, 5*time.Minute, def.vmStatusCheckPeriod())
	o := parse(t, "--machine-vm-statuscheck-period=30s")
	require.NoError(t, o.Validate())
	assert.Equal(t, 30*time.Second, o.vmStatusCheckPeriod())
	off := parse(t, "--machine-vm-statuscheck-period=0")
	require.NoError(t, off.Validate())
	assert.Negative(t, off.vmStatusCheckPeriod())
	negative := parse(t, "--machine-vm-statuscheck-period=-1s")
	assert.ErrorContains(t, negative.Validate(), "--machine-vm-statuscheck-period must not be negative")
}

func TestDriverEndpointFromEnvironment(t *testing.T) {
	t.Setenv(DriverEndpointEnv, "unix:///run/from-env.sock")
	assert.Equal(t, "unix:///run/from-env.sock", parse(t).DriverEndpoint)
	assert.Equal(t, "unix:///run/flag.sock", parse(t, "--driver-endpoint=unix:///run/flag.sock").DriverEndpoint,
		"the flag wins over the variable")
}

func TestValidateReportsEveryProblem(t *testing.T) {
	o := DefaultOptions()
	o.Namespace = "Not_A_Namespace"
	o.KubeAPIQPS = 0
	o.ConcurrentSyncs = 0
	o.DriverEndpoint = "/var/run/driver.sock"
	o.DriverStatusTimeout = 0
	o.LeaderElectRenewDeadline = 20 * time.Second
	o.MachineSafetyAPIServerStatusCheckPeriod = 10 * time.Second
	o.NodeConditions = []string{"Ready", ""}
	o.MachineMaxReplacements = "many"
	err := o.Validate()
	require.Error(t, err)
	for _, want := range []string{
		`--namespace "Not_A_Namespace"`,
		"--kube-api-qps must be positive",
		"--concurrent-syncs must be at least 1",
		`--driver-endpoint "/var/run/driver.sock"`,
		"--driver-status-timeout must be positive",
		"--leader-elect-lease-duration (15s) must be longer than --leader-elect-renew-deadline (20s)",
		"--machine-safety-apiserver-statuscheck-period (10s) must not be shorter",
		"--node-conditions has an empty entry",
		"--machine-max-replacements",
	} {
		assert.ErrorContains(t, err, want)
	}

	// Lease timings do not matter without leader election.
	o = DefaultOptions()
	o.LeaderElect = false
	o.LeaderElectLeaseDuration = 0
	require.NoError(t, o.Validate())
}

func TestLoadConfigs(t *testing.T) {
	control := &rest.Config{Host: "https://control.example"}
	target := &rest.Config{Host: "https://target.example"}

	o := DefaultOptions()
	o.ControlConfig = control
	cfgs, err := o.loadConfigs()
	require.NoError(t, err)
	assert.Equal(t, "https://control.example", cfgs.target.Host, "no target config: the control cluster")
	require.Len(t, cfgs.probes, 1, "one cluster, one probe")
	assert.Equal(t, "control", cfgs.probes[0].name)
	assert.Nil(t, cfgs.probes[0].config.RateLimiter, "probes do not wait behind the controllers")
	assert.NotSame(t, cfgs.control.RateLimiter, cfgs.target.RateLimiter, "each cluster has its own limiter")
	assert.NotNil(t, cfgs.control.RateLimiter)
	assert.Nil(t, cfgs.leaderElection.RateLimiter, "the lease does not queue behind the controllers")
	assert.Equal(t, o.KubeAPIQPS, cfgs.control.QPS)
	assert.Equal(t, o.KubeAPIBurst, cfgs.control.Burst)
	assert.Nil(t, control.RateLimiter, "the caller's config is left alone")

	o.TargetConfig = target
	cfgs, err = o.loadConfigs()
	require.NoError(t, err)
	assert.Equal(t, "https://target.example", cfgs.target.Host)
	require.Len(t, cfgs.probes, 2)
	assert.Equal(t, "target", cfgs.probes[1].name)
	assert.Equal(t, "https://target.example", cfgs.probes[1].config.Host)
	assert.Nil(t, cfgs.probes[1].config.RateLimiter)

	o.TargetKubeconfig = NoTargetKubeconfig
	cfgs, err = o.loadConfigs()
	require.NoError(t, err)
	assert.Nil(t, cfgs.target)
	assert.Len(t, cfgs.probes, 1)

	o = DefaultOptions()
	o.ControlKubeconfig = "/does/not/exist"
	_, err = o.loadConfigs()
	require.ErrorContains(t, err, "--control-kubeconfig /does/not/exist")
}
