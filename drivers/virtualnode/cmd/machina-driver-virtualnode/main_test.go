package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// TestBinaryServesNodesOfTheTargetCluster runs the driver binary against a
// real API server, as the core's sidecar would run it.
func TestBinaryServesNodesOfTheTargetCluster(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		out, err := exec.Command("../../../../hack/envtest-assets.sh").Output()
		require.NoError(t, err, "KUBEBUILDER_ASSETS is unset and hack/envtest-assets.sh failed")
		t.Setenv("KUBEBUILDER_ASSETS", strings.TrimSpace(string(out)))
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	client := kubernetes.NewForConfigOrDie(cfg)

	dir, err := os.MkdirTemp("", "m")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, env.KubeConfig, 0o600))
	bin := filepath.Join(dir, "driver")
	out, err := exec.Command("go", "build", "-ldflags", "-X main.version=v1.2.3-test", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, string(out))

	for _, bad := range []string{"--kube-api-qps=0", "--kube-api-burst=0", "--heartbeat-workers=0", "--heartbeat-interval=0s"} {
		err := exec.Command(bin, bad).Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, bad)
		assert.Equal(t, 2, exit.ExitCode(), bad)
	}

	endpoint := "unix://" + filepath.Join(dir, "d.sock")
	cmd := exec.Command(bin, "--endpoint="+endpoint, "--heartbeat-interval=1h",
		"--heartbeat-workers=2", "--kube-api-qps=-1", "--kube-api-burst=10")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig) // the flag's fallback
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		// nil when the test saw the driver exit (it sends nil for this).
		if err := <-exited; err != nil {
			t.Logf("the driver was killed: %v", err)
		}
	})

	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	identity := driverv1alpha1.NewIdentityServiceClient(conn)
	var info *driverv1alpha1.GetPluginInfoResponse
	require.Eventually(t, func() bool {
		info, err = identity.GetPluginInfo(context.Background(), &driverv1alpha1.GetPluginInfoRequest{})
		return err == nil
	}, time.Minute, 20*time.Millisecond, "the driver did not come up: %s", &stderr)
	assert.Equal(t, "virtualnode.driver.machina.io", info.GetName())
	assert.Equal(t, "v1.2.3-test", info.GetVendorVersion())

	machines := driverv1alpha1.NewMachineServiceClient(conn)
	resp, err := machines.CreateMachine(context.Background(), &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: "bin-1", Namespace: "default"},
		MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "default", ProviderSpec: []byte(`{"bootDelay":"1s"}`)},
	})
	require.NoError(t, err)
	assert.Regexp(t, `^virtualnode://default/bin-1/`, resp.GetProviderId())
	require.Eventually(t, func() bool {
		n, err := client.CoreV1().Nodes().Get(context.Background(), "bin-1", metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}, time.Minute, 50*time.Millisecond, "the Node never became Ready")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "a SIGTERM must end the driver cleanly: %s", &stderr)
	case <-time.After(time.Minute):
		t.Fatalf("the driver did not stop: %s", &stderr)
	}
	exited <- nil // for the cleanup
}
