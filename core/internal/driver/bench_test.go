package driver

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
)

// The benchmarks of this file measure what one driver call costs the core:
// the Client (per-machine lock, timeout, metrics, logging) and the SDK
// server (metrics, logging, validation, recovery, capability gate) around a
// driver that does nothing, over a real Unix socket. Run them with
//
//	go test -run '^$' -bench . -benchmem ./core/internal/driver/
//
// Besides ns/op and allocs/op they report the median and 99th percentile of
// the per-call latencies (p50-µs, p99-µs) and the calls per second. They
// measure and print; they never fail because of a time.

// benchDriver answers every call at once, as a driver whose cloud is
// instantaneous would, so that only the call path is measured.
type benchDriver struct{}

func (benchDriver) CreateMachine(_ context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	name := req.GetMachine().GetName()
	return &driverv1alpha1.CreateMachineResponse{ProviderId: "bench:///" + name, NodeName: name}, nil
}

func (benchDriver) DeleteMachine(context.Context, *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

func (benchDriver) GetMachineStatus(_ context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	name := req.GetMachine().GetName()
	return &driverv1alpha1.GetMachineStatusResponse{ProviderId: "bench:///" + name, NodeName: name}, nil
}

// benchEnv is a driver served by the SDK and a Client connected to it.
type benchEnv struct {
	client *Client
	class  *driverv1alpha1.MachineClass
	// secrets is what the core sends with a create: a cloud credential and
	// the user data (a cloud-init of typical size).
	secrets  map[string][]byte
	userData []byte
}

// startBenchEnv serves benchDriver with the SDK on a Unix socket in a short
// temp dir and connects a Client to it. Both log as in production at the
// default level: the server writes one JSON line per call (to io.Discard
// here, so the cost of formatting is measured but not of a terminal), the
// client logs successful calls only at V(2), which is off by default.
func startBenchEnv(b testing.TB) *benchEnv {
	b.Helper()
	dir, err := os.MkdirTemp("", "m")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "driver.sock")

	srv, err := sdk.NewServer(sdk.Info{Name: "bench.driver.machina.io", Version: "v1.0.0"}, benchDriver{},
		sdk.WithLogger(slog.New(slog.NewJSONHandler(io.Discard, nil))),
		sdk.WithMetricsRegisterer(prometheus.NewRegistry()))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, endpoint) }()
	b.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			b.Errorf("serving the bench driver: %v", err)
		}
	})

	connectCtx, connectCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer connectCancel()
	c, err := Connect(connectCtx, endpoint, Options{
		ProbeInterval: 10 * time.Millisecond,
		Logger:        logr.Discard(),
		Registerer:    prometheus.NewRegistry(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })

	env := withBenchRequests(&benchEnv{})
	env.client = c
	return env
}

// withBenchRequests fills env with what the benchmarks send: a class, a
// cloud credential and user data (a cloud-init of typical size).
func withBenchRequests(env *benchEnv) *benchEnv {
	userData := make([]byte, 2048)
	for i := range userData {
		userData[i] = 'a' + byte(i%26)
	}
	env.class = &driverv1alpha1.MachineClass{
		Name:         "bench-small",
		Namespace:    "default",
		Provider:     "bench",
		ProviderSpec: []byte(`{"image":"debian-13","machineType":"m5.large","zone":"eu-west-1a","tags":{"team":"machina"}}`),
	}
	env.secrets = map[string][]byte{"accessKeyID": []byte("AKIAEXAMPLE"), "secretAccessKey": []byte("c2VjcmV0LWJlbmNoLWtleQ==")}
	env.userData = userData
	return env
}

func (e *benchEnv) machine(name string) *driverv1alpha1.Machine {
	return &driverv1alpha1.Machine{
		Name:       name,
		Namespace:  "default",
		Uid:        "6d1f1a4e-0000-4000-8000-" + fmt.Sprintf("%012d", len(name)),
		ProviderId: "bench:///" + name,
		Labels:     map[string]string{"machina.io/pool": "bench"},
	}
}

// call returns the function that makes one call of rpc about machine name.
func (e *benchEnv) call(rpc, name string) func(context.Context) error {
	switch rpc {
	case "CreateMachine":
		req := e.createRequest(name)
		return func(ctx context.Context) error { _, err := e.client.CreateMachine(ctx, req); return err }
	case "GetMachineStatus":
		req := e.statusRequest(name)
		return func(ctx context.Context) error { _, err := e.client.GetMachineStatus(ctx, req); return err }
	}
	panic("no benchmark for " + rpc)
}

// createRequest is the CreateMachine request of the benchmarks about
// machine name; statusRequest the GetMachineStatus one.
func (e *benchEnv) createRequest(name string) *driverv1alpha1.CreateMachineRequest {
	return &driverv1alpha1.CreateMachineRequest{Machine: e.machine(name), MachineClass: e.class, Secrets: e.secrets, UserData: e.userData}
}

func (e *benchEnv) statusRequest(name string) *driverv1alpha1.GetMachineStatusRequest {
	return &driverv1alpha1.GetMachineStatusRequest{Machine: e.machine(name), MachineClass: e.class, Secrets: e.secrets}
}

// BenchmarkDriverCall measures CreateMachine and GetMachineStatus round
// trips, from one goroutine (serial) and from GOMAXPROCS×parallelism
// goroutines at once, each about its own machine as the manager's workers
// are (calls about one machine are serialised by the client).
func BenchmarkDriverCall(b *testing.B) {
	env := startBenchEnv(b)
	for _, rpc := range []string{"GetMachineStatus", "CreateMachine"} {
		runCalls(b, rpc, env.call)
	}
}

// runCalls runs the serial and parallel sub-benchmarks of rpc; newCall
// returns the function that makes one call of rpc about machine name.
func runCalls(b *testing.B, rpc string, newCall func(rpc, name string) func(context.Context) error) {
	b.Run(rpc+"/serial", func(b *testing.B) {
		call := newCall(rpc, "bench-serial")
		lat := newLatencies(b.N)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		for range b.N {
			t0 := time.Now()
			if err := call(ctx); err != nil {
				b.Fatal(err)
			}
			lat.add(time.Since(t0))
		}
		lat.report(b, time.Since(start))
	})
	for _, par := range []int{1, 8} {
		b.Run(fmt.Sprintf("%s/parallel-%dx", rpc, par), func(b *testing.B) {
			var worker atomic.Int64
			lat := newLatencies(b.N)
			ctx := context.Background()
			b.SetParallelism(par)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				call := newCall(rpc, "bench-"+strconv.FormatInt(worker.Add(1), 10))
				for pb.Next() {
					t0 := time.Now()
					if err := call(ctx); err != nil {
						b.Error(err)
						return
					}
					lat.add(time.Since(t0))
				}
			})
			lat.report(b, time.Since(start))
		})
	}
}

// latencies records the duration of every call of one benchmark run into
// a slice allocated up front, so that recording allocates nothing.
type latencies struct {
	d    []time.Duration
	next atomic.Int64
}

func newLatencies(n int) *latencies { return &latencies{d: make([]time.Duration, n)} }

func (l *latencies) add(d time.Duration) {
	if i := l.next.Add(1) - 1; i < int64(len(l.d)) {
		l.d[i] = d
	}
}

// report adds p50, p99 (in microseconds) and calls per second to the
// benchmark's output.
func (l *latencies) report(b *testing.B, elapsed time.Duration) {
	b.StopTimer()
	n := min(int(l.next.Load()), len(l.d))
	if n == 0 || elapsed <= 0 {
		return
	}
	d := l.d[:n]
	slices.Sort(d)
	b.ReportMetric(float64(percentile(d, 0.50))/float64(time.Microsecond), "p50-µs")
	b.ReportMetric(float64(percentile(d, 0.99))/float64(time.Microsecond), "p99-µs")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "calls/s")
}

// percentile returns the q-quantile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted)) + 0.5)
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}
