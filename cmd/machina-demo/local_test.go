//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/core/api/v1alpha1"
)

// TestLocalClusterForADriver is what docs/writing-a-driver.md walks a
// driver author through: their driver (here machina-driver-inmemory, a
// real process serving a socket of its own) and one command that brings a
// MachineDeployment of three machines up on it.
func TestLocalClusterForADriver(t *testing.T) {
	socket, driver := startInmemoryDriver(t)

	p := startDemo(t, "--driver-endpoint=unix://"+socket, "--no-nodes",
		`--provider-spec={"capacity":{"cpu":"2","memory":"4Gi"}}`)
	p.waitOutput(t, "Done in ", 6*time.Minute)
	p.waitOutput(t, "Everything keeps running until Ctrl-C", time.Minute)
	assert.Contains(t, p.out.String(), "MachineDeployment local: 3 machines available")
	assert.Contains(t, p.out.String(), "--target-kubeconfig=none")

	m := regexp.MustCompile(`export KUBECONFIG=(\S+)`).FindStringSubmatch(p.out.String())
	require.NotNil(t, m)
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: m[1]}, &clientcmd.ConfigOverrides{}).ClientConfig()
	require.NoError(t, err)
	scheme, err := demoScheme()
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	md := &v1alpha1.MachineDeployment{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: localName}, md))
	assert.Equal(t, int32(3), md.Status.AvailableReplicas)
	var machines v1alpha1.MachineList
	require.NoError(t, c.List(context.Background(), &machines, client.InNamespace(namespace)))
	require.Len(t, machines.Items, 3)
	for _, machine := range machines.Items {
		assert.Contains(t, []v1alpha1.MachinePhase{v1alpha1.MachineRunning, v1alpha1.MachineAvailable},
			machine.Status.CurrentStatus.Phase, machine.Name)
		assert.NotEmpty(t, machine.Spec.ProviderID, "%s has a VM of the driver", machine.Name)
	}

	dir := regexp.MustCompile(`Logs: (\S+)/manager\.log`).FindStringSubmatch(p.out.String())
	require.NotNil(t, dir)
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, exitOK, p.wait(t, 2*time.Minute), "Ctrl-C is how a local cluster ends")
	assert.NoDirExists(t, dir[1])
	assert.Empty(t, processesUsing(t, dir[1]))
	require.NoError(t, driver.Process.Signal(os.Interrupt), "the user's driver is theirs: it still runs")
}

// startInmemoryDriver builds machina-driver-inmemory and runs it, as a
// driver author runs theirs, on a socket it returns.
func startInmemoryDriver(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	root, err := manifests.RepoRoot(".")
	require.NoError(t, err)
	bin, err := binaries()
	require.NoError(t, err)
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/machina-driver-inmemory")
	build.Dir = filepath.Join(root, "drivers", "inmemory")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)

	sockDir, err := os.MkdirTemp("", "drv")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	socket := filepath.Join(sockDir, "driver.sock")
	driver := exec.Command(filepath.Join(bin, "machina-driver-inmemory"), "--endpoint=unix://"+socket)
	driverLog := &syncBuffer{}
	driver.Stdout, driver.Stderr = driverLog, driverLog
	require.NoError(t, driver.Start())
	t.Cleanup(func() {
		_ = driver.Process.Kill()
		_ = driver.Wait()
		if t.Failed() {
			t.Logf("driver output:\n%s", driverLog.String())
		}
	})
	return socket, driver
}

// A wrong socket path ends the local cluster within seconds, naming the
// path, instead of after --timeout (issue 32).
func TestLocalClusterFailsFastOnAMissingSocket(t *testing.T) {
	_, err := binaries()
	require.NoError(t, err)
	socket := filepath.Join(t.TempDir(), "nothing-here.sock")
	start := time.Now()
	p := startDemo(t, "--driver-endpoint=unix://"+socket)
	assert.Equal(t, exitFailed, p.wait(t, 30*time.Second))
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Contains(t, p.out.String(), "driver socket "+socket+" does not exist")
}

// A driver binary (--driver) that never creates its socket ends the local
// cluster once its grace has passed, naming the socket and the binary.
func TestLocalClusterStopsWhenTheDriverMakesNoSocket(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	require.NoError(t, err)
	p := startDemo(t, "--driver="+sleep, "--driver-arg=600", "--no-nodes")
	assert.Equal(t, exitFailed, p.wait(t, 2*time.Minute))
	assert.Regexp(t, `driver socket \S+/driver\.sock does not exist: `+regexp.QuoteMeta(sleep)+` has not created it within 20s`, p.out.String())
	assert.NotContains(t, p.out.String(), "not ready within", "no wait for --timeout")
}

// A provider spec the driver refuses ends the local cluster at the first
// refused create with the machine's own error, instead of after --timeout;
// the kubeconfig was printed at the start, before anything could fail.
func TestLocalClusterStopsWhenTheDriverRefusesTheSpec(t *testing.T) {
	socket, driver := startInmemoryDriver(t)
	p := startDemo(t, "--driver-endpoint=unix://"+socket, "--no-nodes", `--provider-spec={"bootDelay":"soon"}`)
	assert.Equal(t, exitFailed, p.wait(t, 2*time.Minute))
	out := p.out.String()
	assert.Regexp(t, `the driver refused machine local-\S+: CreateMachine failed \(InvalidArgument\): .*bootDelay`, out)
	kubeconfig := strings.Index(out, "export KUBECONFIG=")
	refused := strings.Index(out, "the driver refused machine")
	assert.True(t, kubeconfig >= 0 && kubeconfig < refused, "the kubeconfig comes first")
	assert.NotContains(t, out, "not reached within", "no wait for --timeout")
	require.NoError(t, driver.Process.Signal(os.Interrupt))
}

func TestLocalFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--driver=/x", "--driver-endpoint=unix:///s"}, "exclude each other"},
		{[]string{"--no-nodes"}, "need --driver or --driver-endpoint"},
		{[]string{"--driver-endpoint=/s"}, "want unix:///path"},
		{[]string{"--driver-endpoint=unix:///s", "--provider-spec=[1]"}, "must be a JSON object"},
	} {
		_, err := parseFlags(append([]string{"--assets=/a"}, tc.args...))
		assert.ErrorContains(t, err, tc.err, "%v", tc.args)
	}
	c, err := parseFlags([]string{"--assets=/a", "--driver-endpoint=unix:///s"})
	require.NoError(t, err)
	assert.True(t, c.keep, "a local cluster runs until Ctrl-C")
	assert.Equal(t, int32(3), c.replicas)
}
