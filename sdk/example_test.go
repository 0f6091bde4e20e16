package sdk_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// exampleDriver keeps its VMs in a map. It implements the required RPCs
// only, so it advertises no capabilities.
type exampleDriver struct {
	mu  sync.Mutex
	vms map[string]string // machine name -> provider ID
}

func (d *exampleDriver) CreateMachine(_ context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := req.GetMachine().GetName()
	id, ok := d.vms[name]
	if !ok { // Idempotent: a repeated create returns the same VM.
		id = "example:///" + name
		d.vms[name] = id
	}
	return &driverv1alpha1.CreateMachineResponse{ProviderId: id, NodeName: name}, nil
}

func (d *exampleDriver) DeleteMachine(_ context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.vms, req.GetMachine().GetName()) // A VM that is gone is fine.
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

func (d *exampleDriver) GetMachineStatus(_ context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	name := req.GetMachine().GetName()
	id, ok := d.vms[name]
	if !ok {
		return nil, sdk.NotFound("no VM for machine %q", name)
	}
	return &driverv1alpha1.GetMachineStatusResponse{ProviderId: id, NodeName: name}, nil
}

// A driver's main would call sdk.Main(info, driver). Here the server runs
// in-process on a temporary socket, a client asks who it is and creates a
// machine, and cancelling the context stops the server.
func ExampleServer_Serve() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	endpoint := "unix://" + filepath.Join(dir, "driver.sock")

	info := sdk.Info{Name: "example.driver.machina.io", Version: "v0.1.0"}
	server, err := sdk.NewServer(info, &exampleDriver{vms: map[string]string{}},
		sdk.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- server.Serve(ctx, endpoint) }()

	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	identity := driverv1alpha1.NewIdentityServiceClient(conn)
	callCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// WaitForReady rides out the moment before the socket exists.
	pluginInfo, err := identity.GetPluginInfo(callCtx, &driverv1alpha1.GetPluginInfoRequest{}, grpc.WaitForReady(true))
	if err != nil {
		panic(err)
	}
	fmt.Println(pluginInfo.GetName(), pluginInfo.GetVendorVersion())

	machines := driverv1alpha1.NewMachineServiceClient(conn)
	created, err := machines.CreateMachine(callCtx, &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: "worker-1", Namespace: "default"},
		MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "default", ProviderSpec: []byte(`{"size":"small"}`)},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(created.GetProviderId())

	stop()
	fmt.Println("stopped:", <-served)
	// Output:
	// example.driver.machina.io v0.1.0
	// example:///worker-1
	// stopped: <nil>
}
