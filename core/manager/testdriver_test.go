package manager

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/machina-io/machina/sdk"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// testDriver is a minimal driver served over a real Unix socket by the SDK:
// VMs in a map, and a readiness switch. The full in-memory driver lives in
// its own module; the process tests in cmd/machina-manager use it.
type testDriver struct {
	mu       sync.Mutex
	vms      map[string]testVM // by machine name
	notReady atomic.Bool
	// classNamespaces records machine_class.namespace of every create.
	classNamespaces []string
}

func (d *testDriver) CreateMachine(_ context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := req.GetMachine().GetName()
	d.classNamespaces = append(d.classNamespaces, req.GetMachineClass().GetNamespace())
	vm, ok := d.vms[name]
	if !ok {
		vm = testVM{providerID: "test:///" + name, class: req.GetMachineClass().GetName(), namespace: req.GetMachineClass().GetNamespace()}
		d.vms[name] = vm
	}
	return &driverv1alpha1.CreateMachineResponse{ProviderId: vm.providerID, NodeName: name}, nil
}

func (d *testDriver) DeleteMachine(_ context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.vms, req.GetMachine().GetName())
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

func (d *testDriver) GetMachineStatus(_ context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := req.GetMachine().GetName()
	vm, ok := d.vms[name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "no VM for machine %s", name)
	}
	return &driverv1alpha1.GetMachineStatusResponse{ProviderId: vm.providerID, NodeName: name}, nil
}

func (d *testDriver) Probe(context.Context) (bool, error) {
	return !d.notReady.Load(), nil
}

func (d *testDriver) vmCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.vms)
}

// testVM is one VM of the testDriver.
type testVM struct {
	providerID string
	// class and namespace of the MachineClass it was created with, the
	// scope of ListMachines.
	class, namespace string
}

// plant adds a VM as if a create had run, e.g. an orphan whose Machine is gone.
func (d *testDriver) plant(name, class, namespace string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.vms[name] = testVM{providerID: "test:///" + name, class: class, namespace: namespace}
}

func (d *testDriver) has(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.vms[name]
	return ok
}

// ListMachines lists the VMs of a class; implementing it advertises
// TYPE_LIST_MACHINES, which the orphan collector needs.
func (d *testDriver) ListMachines(_ context.Context, req *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := &driverv1alpha1.ListMachinesResponse{}
	for name, vm := range d.vms {
		if vm.class == req.GetMachineClass().GetName() && vm.namespace == req.GetMachineClass().GetNamespace() {
			resp.Machines = append(resp.Machines, &driverv1alpha1.ListedMachine{ProviderId: vm.providerID, MachineName: name})
		}
	}
	return resp, nil
}

// startTestDriver serves a testDriver on a fresh socket until the test ends
// and returns it with its endpoint.
func startTestDriver(t *testing.T) (*testDriver, string) {
	t.Helper()
	d := &testDriver{vms: map[string]testVM{}}
	srv, err := sdk.NewServer(sdk.Info{Name: "test.driver.machina.io", Version: "0.0.1"}, d)
	require.NoError(t, err)
	// t.TempDir() can exceed the 108-byte limit of a socket path.
	dir, err := os.MkdirTemp("", "m")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "driver.sock")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, endpoint) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("test driver: %v", err)
		}
	})
	return d, endpoint
}

func (d *testDriver) String() string { return fmt.Sprintf("testDriver(%d VMs)", d.vmCount()) }

// startForeignServer serves a gRPC server without the Driver API on a
// fresh socket, standing in for a driver of another API version: every
// call answers UNIMPLEMENTED.
func startForeignServer(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "m")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "foreign.sock")
	l, err := net.Listen("unix", path)
	require.NoError(t, err)
	srv := grpc.NewServer()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return "unix://" + path
}
