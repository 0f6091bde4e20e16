package driver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

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
		for _, par := range []int{0, 8} {
			name := rpc + "/serial"
			if par > 0 {
				name = fmt.Sprintf("%s/parallel-%dx", rpc, par)
			}
			b.Run(name, func(b *testing.B) {
				var worker atomic.Int64
				lat := newLatencies(b.N)
				ctx := context.Background()
				b.ReportAllocs()
				run := func(call func(context.Context) error, next func() bool) {
					for next() {
						t0 := time.Now()
						if err := call(ctx); err != nil {
							b.Error(err)
							return
						}
						lat.add(time.Since(t0))
					}
				}
				if par == 0 {
					call := bench.floorCall(client, rpc, "bench-serial")
					b.ResetTimer()
					start := time.Now()
					i := 0
					run(call, func() bool { i++; return i <= b.N })
					lat.report(b, time.Since(start))
					return
				}
				b.SetParallelism(par)
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					run(bench.floorCall(client, rpc, "bench-"+strconv.FormatInt(worker.Add(1), 10)), pb.Next)
				})
				lat.report(b, time.Since(start))
			})
		}
	}
}

// floorCall returns the function that makes one call of rpc about machine
// name through the bare generated client.
func (e *benchEnv) floorCall(c driverv1alpha1.MachineServiceClient, rpc, name string) func(context.Context) error {
	m := e.machine(name)
	switch rpc {
	case "CreateMachine":
		req := &driverv1alpha1.CreateMachineRequest{Machine: m, MachineClass: e.class, Secrets: e.secrets, UserData: e.userData}
		return func(ctx context.Context) error { _, err := c.CreateMachine(ctx, req); return err }
	case "GetMachineStatus":
		req := &driverv1alpha1.GetMachineStatusRequest{Machine: m, MachineClass: e.class, Secrets: e.secrets}
		return func(ctx context.Context) error { _, err := c.GetMachineStatus(ctx, req); return err }
	}
	panic("no benchmark for " + rpc)
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
