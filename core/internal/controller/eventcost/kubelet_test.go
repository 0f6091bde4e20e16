package eventcost_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// kubeletEnv, set in the environment of the test binary, makes
// TestKubeletProcess the simulated kubelet: a process of its own, so that
// what its heartbeats allocate is not counted as the manager's.
const kubeletEnv = "EVENTCOST_KUBELET_KUBECONFIG"

// TestKubeletProcess is not a test: started by startKubelet with kubeletEnv
// set, it reads Node names from stdin, writes a heartbeat to each (the Ready
// condition's lastHeartbeatTime, as a kubelet's status update changes it)
// and answers with the Node's new resourceVersion. Without kubeletEnv it
// returns at once.
func TestKubeletProcess(t *testing.T) {
	kubeconfig := os.Getenv(kubeletEnv)
	if kubeconfig == "" {
		t.Skip("the simulated kubelet of TestPerEventCostDoesNotGrowWithTheFleet")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 1000, 1000 // client-go's default of 5 would pace the beats
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	// The API server keeps whole seconds of a condition's time, and a
	// write that changes nothing is no event: each beat is one second
	// later than the one before, on a clock of the kubelet's own.
	clock := time.Now().UTC().Truncate(time.Second)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		name := in.Text()
		clock = clock.Add(time.Second)
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","lastHeartbeatTime":%q}]}}`, clock.Format(time.RFC3339))
		n, err := cs.CoreV1().Nodes().Patch(context.Background(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status")
		require.NoError(t, err)
		_, err = fmt.Println(n.ResourceVersion)
		require.NoError(t, err)
	}
	require.NoError(t, in.Err())
}

// kubelet is the simulated kubelet process.
type kubelet struct {
	in  io.Writer
	out *bufio.Scanner
}

func startKubelet(t *testing.T, kubeconfig string) *kubelet {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKubeletProcess$")
	cmd.Env = append(os.Environ(), kubeletEnv+"="+kubeconfig)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = in.Close()
		require.NoError(t, cmd.Wait(), "the simulated kubelet")
	})
	return &kubelet{in: in, out: bufio.NewScanner(out)}
}

// beat writes a heartbeat to node and returns the Node's resourceVersion
// after it.
func (k *kubelet) beat(t *testing.T, node string) string {
	_, err := fmt.Fprintln(k.in, node)
	require.NoError(t, err)
	require.True(t, k.out.Scan(), "the simulated kubelet stopped: %v", k.out.Err())
	return strings.TrimSpace(k.out.Text())
}

// heartbeatPath measures the Node path: a heartbeat of node, written by
// the simulated kubelet, until the cache has decoded the watch event,
// trimmed it (the manager's transform) and stored it. A heartbeat changes
// only timestamps; it is most of the Node events a fleet sends (one per
// Node and interval), so what the cache spends on one is spent a fleet's
// worth of times per interval.
func heartbeatPath(t *testing.T, c cache.Cache, k *kubelet, node string) func() {
	t.Helper()
	inf, err := c.GetInformer(t.Context(), &corev1.Node{})
	require.NoError(t, err)
	seen := make(chan string, 16)
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(_, o any) {
		if n, ok := o.(*corev1.Node); ok && n.Name == node {
			select {
			case seen <- n.ResourceVersion:
			default: // beat drains before each heartbeat
			}
		}
	}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = inf.RemoveEventHandler(reg) })
	return func() {
		for len(seen) > 0 {
			<-seen
		}
		rv := k.beat(t, node)
		deadline := time.After(time.Minute)
		for {
			select {
			case got := <-seen:
				if got == rv {
					return
				}
			case <-deadline:
				t.Fatalf("the cache never saw node %s at resourceVersion %s", node, rv)
			}
		}
	}
}

// kubeletStatus is the status a kubelet reports beside the conditions: 50
// images (its default nodeStatusMaxImages), nodeInfo, daemon endpoints,
// addresses, capacity. Most of it is what the manager's cache drops
// (core/internal/cachetrim).
func kubeletStatus(name string) corev1.NodeStatus {
	s := corev1.NodeStatus{
		Capacity:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("7941Mi"), corev1.ResourcePods: resource.MustParse("110")},
		Allocatable:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1920m"), corev1.ResourceMemory: resource.MustParse("6Gi"), corev1.ResourcePods: resource.MustParse("110")},
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.250.1.17"}, {Type: corev1.NodeHostName, Address: name}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
		NodeInfo: corev1.NodeSystemInfo{MachineID: "ec2c3f1c6d0b4a8e9f7a6b5c4d3e2f10", SystemUUID: "ec2c3f1c-6d0b-4a8e-9f7a-6b5c4d3e2f10",
			BootID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", KernelVersion: "6.6.62-cloud-amd64", OSImage: "Garden Linux 1592.4",
			ContainerRuntimeVersion: "containerd://1.7.24", KubeletVersion: "v1.33.4", OperatingSystem: "linux", Architecture: "amd64"},
	}
	for i := range 50 {
		s.Images = append(s.Images, corev1.ContainerImage{
			Names: []string{
				fmt.Sprintf("europe-docker.pkg.dev/gardener-project/releases/gardener/image-%02d@sha256:%064x", i, i*7919),
				fmt.Sprintf("europe-docker.pkg.dev/gardener-project/releases/gardener/image-%02d:v1.%d.0", i, i),
			},
			SizeBytes: int64(10_000_000 + i*123_457),
		})
	}
	return s
}
