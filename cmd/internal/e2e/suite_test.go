package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/internal/process"
)

// The objects of MCM's integration test framework, under MCM's names.
const (
	// namespace is MCM's default CONTROL_CLUSTER_NAMESPACE.
	namespace      = "default"
	classV1        = "test-mc-v1"
	classV2        = "test-mc-v2"
	secretName     = "test-mc-secret"
	machineName    = "test-machine"
	dummyMachine   = "test-machine-dummy"
	deploymentName = "test-machine-deployment"
	selectorKey    = "test-label"
	selectorValue  = "test-label"
	// orphanName names the VM scenario 9 creates behind the manager's back.
	orphanName = "test-orphan-vm"
)

// overshootPeriod is the manager's --machine-safety-overshooting-period.
const overshootPeriod = 300 * time.Millisecond

// providerSpecs are the two classes' virtualnode provider specs. The boot
// delay makes a new Node report NotReady for a moment, so that "ready
// nodes" (what MCM counts) differs from "nodes" until the machine joined;
// the capacities tell the two classes' Nodes apart.
var providerSpecs = map[string]string{
	classV1: `{"bootDelay":"1s","capacity":{"cpu":"2","memory":"4Gi","pods":"110"}}`,
	classV2: `{"bootDelay":"1s","capacity":{"cpu":"4","memory":"8Gi","pods":"110"}}`,
}

// suite is the one environment all scenarios share: an API server, the
// driver and the manager, and the classes.
type suite struct {
	env     *testenv.Env
	c       client.Client
	driver  *process.Process
	manager *process.Process
	// socket is the driver's Unix socket.
	socket string
	// readyURL is the manager's /readyz.
	readyURL string
	vms      *vmTracker

	// Baselines taken by one scenario and checked by later ones, as the
	// variables of MCM's Describe blocks: the Node count before scenario 1
	// and before scenario 4, and the freeze events after scenario 4.
	machineInitialNodes int
	deployInitialNodes  int
	freezeBaseline      map[string]int
}

// setupSuite builds the binaries, starts the API server, the driver and the
// manager, and creates the secret and the two classes. Everything it starts
// is stopped when t ends: the manager first (cleanups run last-in first-out),
// then the driver, then the API server.
func setupSuite(t *testing.T) *suite {
	t.Helper()
	root, err := manifests.RepoRoot(".")
	require.NoError(t, err)
	logDir := os.Getenv("MACHINA_E2E_LOG_DIR")
	if logDir == "" {
		logDir = t.TempDir()
	} else {
		require.NoError(t, os.MkdirAll(logDir, 0o755))
	}

	// The build and the API server's start are the slow parts of the
	// setup: run them side by side.
	binDir := t.TempDir()
	type built struct {
		paths map[string]string
		err   error
	}
	builds := make(chan built, 1)
	go func() {
		paths, err := buildBinaries(t.Context(), root, binDir, managerBinary, driverBinary)
		builds <- built{paths, err}
	}()
	env := testenv.Start(t)
	b := <-builds
	require.NoError(t, b.err)

	s := &suite{env: env, c: env.Client}

	// t.TempDir() can exceed the 108 bytes of a socket path.
	sockDir, err := os.MkdirTemp("", "m")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	s.socket = filepath.Join(sockDir, "driver.sock")
	endpoint := "unix://" + s.socket

	s.driver = startProcess(t, driverBinary.name, b.paths[driverBinary.name], logDir,
		"--endpoint="+endpoint,
		"--target-kubeconfig="+env.Kubeconfig,
		"--heartbeat-interval=10s",
	)
	s.eventually(t, "the driver's socket", func(context.Context) (bool, string, error) {
		_, err := os.Stat(s.socket)
		return err == nil, fmt.Sprint(err), nil
	})

	healthAddr := freeAddress(t)
	s.manager = startProcess(t, managerBinary.name, b.paths[managerBinary.name], logDir, managerArgs(env.Kubeconfig, endpoint, healthAddr)...)
	s.readyURL = "http://" + healthAddr + "/readyz"
	s.waitReady(t, s.readyURL)

	s.vms = newVMTracker(t, endpoint)
	s.createClasses(t)
	return s
}

// managerArgs are the manager's flags: MCM's integration test settings
// (no leader election, a 300ms overshooting period) and short periods and
// timeouts, so that every safety mechanism acts within the test's time.
// The target cluster is the control cluster, as in MCM's default setup.
func managerArgs(kubeconfig, endpoint, healthAddr string) []string {
	return []string{
		"--control-kubeconfig=" + kubeconfig,
		"--namespace=" + namespace,
		"--driver-endpoint=" + endpoint,
		"--leader-elect=false",
		"--metrics-bind-address=0",
		"--health-probe-bind-address=" + healthAddr,
		// A machine that has not joined in two minutes is Failed and
		// replaced within the test, instead of after MCM's 20 minutes.
		"--machine-creation-timeout=2m",
		"--machine-health-timeout=1m",
		"--machine-drain-timeout=30s",
		// Scenario 6's thresholds rest on these (MCM's defaults).
		"--safety-up=2",
		"--safety-down=1",
		"--machine-safety-overshooting-period=" + overshootPeriod.String(),
		"--machine-safety-orphan-vms-period=2s",
	}
}

// waitReady waits until the manager reports ready; its readiness includes
// the driver's Probe over the socket.
func (s *suite) waitReady(t *testing.T, url string) {
	t.Helper()
	s.eventually(t, "the manager's "+url+" answering 200", func(ctx context.Context) (bool, string, error) {
		return process.ProbeHTTP(ctx, url)
	})
}

// createClasses creates the secret test-mc-secret and the classes
// test-mc-v1 and test-mc-v2, as MCM's SetupBeforeSuite does.
func (s *suite) createClasses(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: secretName},
		Data: map[string][]byte{
			"userData": []byte("#cloud-config\nhostname: <<MACHINE_NAME>>\n"),
		},
	}
	require.NoError(t, s.c.Create(ctx, secret))
	for _, name := range []string{classV1, classV2} {
		class := &v1alpha1.MachineClass{
			ObjectMeta:   metav1.ObjectMeta{Namespace: namespace, Name: name},
			Provider:     "virtualnode",
			ProviderSpec: runtime.RawExtension{Raw: []byte(providerSpecs[name])},
			SecretRef:    &corev1.SecretReference{Namespace: namespace, Name: secretName},
		}
		require.NoError(t, s.c.Create(ctx, class))
	}
}

// freeAddress returns a loopback address whose port was free a moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}
