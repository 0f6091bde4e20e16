package virtualnode

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// quiet is a logger for drivers under test.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// startDriver returns a driver on the test cluster whose heartbeat runs
// until the test ends.
func startDriver(t *testing.T, opts Options) *Driver {
	t.Helper()
	d, stop := runDriver(t, opts)
	t.Cleanup(stop)
	return d
}

// runDriver returns a driver on the test cluster whose heartbeat runs until
// stop, which returns once Run has.
func runDriver(t *testing.T, opts Options) (d *Driver, stop func()) {
	t.Helper()
	if opts.Target == nil {
		opts.Target = testConfig
	}
	opts.Logger = quiet
	d = New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	return d, func() {
		once.Do(func() {
			cancel()
			require.NoError(t, <-done)
		})
	}
}

func machine(name string) *driverv1alpha1.Machine {
	return &driverv1alpha1.Machine{Name: name, Namespace: "default"}
}

func class(name, spec string) *driverv1alpha1.MachineClass {
	return &driverv1alpha1.MachineClass{Name: name, Namespace: "default", ProviderSpec: []byte(spec)}
}

func createReq(name, className, spec string) *driverv1alpha1.CreateMachineRequest {
	return &driverv1alpha1.CreateMachineRequest{Machine: machine(name), MachineClass: class(className, spec)}
}

func statusReq(m *driverv1alpha1.Machine) *driverv1alpha1.GetMachineStatusRequest {
	return &driverv1alpha1.GetMachineStatusRequest{Machine: m, MachineClass: class("small", "{}")}
}

func deleteReq(m *driverv1alpha1.Machine) *driverv1alpha1.DeleteMachineRequest {
	return &driverv1alpha1.DeleteMachineRequest{Machine: m, MachineClass: class("small", "{}")}
}

func requireCode(t *testing.T, c codes.Code, err error) {
	t.Helper()
	require.Error(t, err)
	s, ok := status.FromError(err)
	require.True(t, ok, "not a status error: %v", err)
	require.Equal(t, c, s.Code(), "error: %v", err)
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := testClient.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return n
}

// condition returns the condition of type typ of a Node, nil if absent.
func condition(n *corev1.Node, typ corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// eventuallyCondition waits until the Node's condition typ has status st
// (and reason, when not empty) and returns the Node.
func eventuallyCondition(t *testing.T, name string, typ corev1.NodeConditionType, st corev1.ConditionStatus, reason string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	require.Eventually(t, func() bool {
		n, err := testClient.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		c := condition(n, typ)
		node = n
		return c != nil && c.Status == st && (reason == "" || c.Reason == reason)
	}, 30*time.Second, 50*time.Millisecond, "Node %s never had %s=%s (%s)", name, typ, st, reason)
	return node
}

// annotate sets (or, with value "", removes) an annotation of a Node.
func annotate(t *testing.T, name, key, value string) {
	t.Helper()
	patch := `{"metadata":{"annotations":{"` + key + `":"` + value + `"}}}`
	if value == "" {
		patch = `{"metadata":{"annotations":{"` + key + `":null}}}`
	}
	_, err := testClient.CoreV1().Nodes().Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
}

// removeNode deletes a Node without finalizers, whatever state it is in.
func removeNode(t *testing.T, name string) {
	t.Helper()
	ctx := context.Background()
	_, err := testClient.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	require.NoError(t, err)
	err = testClient.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
}
