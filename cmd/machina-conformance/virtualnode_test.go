package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/testenv"
)

// TestAgainstVirtualNodeDriver runs the binary against the virtualnode
// driver, whose VMs are Nodes of a real kube-apiserver, the way a third
// party runs it against a driver process it started by hand.
func TestAgainstVirtualNodeDriver(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	conf, _ := binaries(t)
	driver := buildVirtualNode(t)

	dir, err := os.MkdirTemp("", "mconf")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "driver.sock")
	cmd := exec.Command(driver, "--endpoint", endpoint, "--target-kubeconfig", env.Kubeconfig)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("driver log:\n%s", log.String())
		}
	})

	vn := filepath.Join(testdata, "virtualnode")
	out, code := runBinary(t, conf,
		"--endpoint", endpoint,
		"--machine-class", filepath.Join(vn, "machineclass.yaml"),
		"--incompatible-provider-spec", filepath.Join(vn, "incompatible-providerspec.yaml"),
		"--secrets", filepath.Join(testdata, "secrets.yaml"),
		"--volumes", filepath.Join(vn, "volumes.yaml"),
		"--node-template", filepath.Join(testdata, "nodetemplate.yaml"),
		"--user-data", filepath.Join(testdata, "userdata.sh"),
	)
	require.Equal(t, exitPassed, code, out)
	assert.Contains(t, out, "--- PASS  CreateMachine/idempotent")
	assert.Contains(t, out, "--- PASS  GetVolumeIDs/")
	assert.Contains(t, out, "RESULT: PASS")

	// The suite deletes what it created: the driver's Nodes are gone (or
	// going: a Node being deleted counts as a gone VM).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var nodes corev1.NodeList
	require.NoError(t, env.Client.List(ctx, &nodes, client.HasLabels{"virtualnode.machina.io/class"}))
	for _, n := range nodes.Items {
		assert.NotNil(t, n.DeletionTimestamp, "node %s of the run is left behind", n.Name)
	}
}

// TestLauncherModeVirtualNodeDriver lets the suite start the virtualnode
// driver itself (launcher mode) against a real kube-apiserver and runs the
// Launcher checks: all run and pass without a warning, and the restart
// check finds its VM (a Node) again after the restart.
func TestLauncherModeVirtualNodeDriver(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	conf, _ := binaries(t)
	driver := buildVirtualNode(t)
	vn := filepath.Join(testdata, "virtualnode")
	out, code, rep := runLauncher(t, conf,
		"--driver-command", driver+" --target-kubeconfig "+env.Kubeconfig,
		"--driver-stop-timeout", "20s", "--focus", "^Launcher/",
		"--machine-class", filepath.Join(vn, "machineclass.yaml"),
		"--timeout-ready", "30s", "-v",
	)
	requireCleanLaunch(t, out, code, rep)
	assert.NotContains(t, out, "did not survive the restart", "the Node outlives the driver process")
}

// buildVirtualNode builds the virtualnode driver binary.
func buildVirtualNode(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "./cmd/machina-driver-virtualnode")
	cmd.Dir = "../../drivers/virtualnode"
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build machina-driver-virtualnode: %s", out)
	return filepath.Join(dir, "machina-driver-virtualnode")
}
