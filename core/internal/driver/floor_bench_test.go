package driver

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// BenchmarkGRPCFloor makes the calls of BenchmarkDriverCall, with the same
// requests over a Unix socket, through bare grpc-go: the generated client
// on a plain connection and the generated service on a plain server, no
// SDK, no Client, no interceptor. It is the floor under the driver path,
// what any Go driver and core pay for gRPC alone; BenchmarkDriverCall minus
// this is what machina adds.
func BenchmarkGRPCFloor(b *testing.B) {
	client := startFloorEnv(b)
	bench := withBenchRequests(&benchEnv{})
	for _, rpc := range []string{"GetMachineStatus", "CreateMachine"} {
		runCalls(b, rpc, func(rpc, name string) func(context.Context) error {
			switch rpc {
			case "CreateMachine":
				req := bench.createRequest(name)
				return func(ctx context.Context) error { _, err := client.CreateMachine(ctx, req); return err }
			case "GetMachineStatus":
				req := bench.statusRequest(name)
				return func(ctx context.Context) error { _, err := client.GetMachineStatus(ctx, req); return err }
			}
			panic("no benchmark for " + rpc)
		})
	}
}

// floorServer is benchDriver registered on a bare grpc.Server.
type floorServer struct {
	driverv1alpha1.UnimplementedMachineServiceServer
	benchDriver
}

func (s floorServer) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	return s.benchDriver.CreateMachine(ctx, req)
}

func (s floorServer) GetMachineStatus(ctx context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	return s.benchDriver.GetMachineStatus(ctx, req)
}

func (s floorServer) DeleteMachine(ctx context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	return s.benchDriver.DeleteMachine(ctx, req)
}

// startFloorEnv serves floorServer on a Unix socket and returns a bare
// client of it.
func startFloorEnv(b testing.TB) driverv1alpha1.MachineServiceClient {
	b.Helper()
	dir, err := os.MkdirTemp("", "m")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "driver.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	srv := grpc.NewServer()
	driverv1alpha1.RegisterMachineServiceServer(srv, floorServer{})
	go func() { _ = srv.Serve(lis) }()
	b.Cleanup(srv.Stop)

	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = conn.Close() })
	return driverv1alpha1.NewMachineServiceClient(conn)
}
