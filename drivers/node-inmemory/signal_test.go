package nodeinmemory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/machina-io/machina/internal/process"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// The moments at which TestStopSignalsAlwaysStopGracefully sends a signal.
const (
	// atStart: as soon as the driver's first log line appears, while it
	// still loads the proto files, binds its socket and starts its server.
	atStart = "at start"
	// whenIdle: once it answers Probe, with no call in flight.
	whenIdle = "when idle"
	// underLoad: while concurrent calls keep it busy.
	underLoad = "under load"
)

// stopBound is how long a driver may take to exit after the signal. Calls
// in flight are fast here and --shutdown-grace is 5s.
const stopBound = 15 * time.Second

// TestStopSignalsAlwaysStopGracefully starts the driver 18 times, three at
// a time, and sends SIGTERM or SIGINT at start, when idle and under load.
// Every time the driver must act on it: log "stopping gracefully", exit 0
// within stopBound and remove its socket. main.js takes both signals before
// it loads anything, so one that arrives while the driver starts is acted
// on once it serves.
func TestStopSignalsAlwaysStopGracefully(t *testing.T) {
	const runs, parallel = 18, 3
	nodeBin, script := node(t), mainJS(t)
	moments := []string{atStart, whenIdle, underLoad}
	signals := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT}

	errs := make([]error, runs)
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			errs[i] = stopOnce(nodeBin, script, moments[i%len(moments)], signals[(i/len(moments))%len(signals)])
		}()
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			t.Errorf("run %d, %v %s: %v", i, signals[(i/len(moments))%len(signals)], moments[i%len(moments)], err)
		}
	}
	t.Logf("%d of %d driver processes stopped gracefully after the signal, in %v", runs-failed, runs, time.Since(start).Round(time.Millisecond))
}

// stopOnce starts one driver, sends it sig at the given moment and checks
// the graceful stop. It returns an error instead of failing the test
// because it runs outside the test's goroutine.
func stopOnce(nodeBin, script, moment string, sig syscall.Signal) (err error) {
	sockDir, err := os.MkdirTemp("", "nos")
	if err != nil {
		return err
	}
	defer os.RemoveAll(sockDir)
	socket := filepath.Join(sockDir, "driver.sock")
	logs := &process.Buffer{}
	p, err := process.Start(process.Config{
		Name:   "node driver",
		Path:   nodeBin,
		Args:   []string{script, "--shutdown-grace", "5"},
		Env:    append(os.Environ(), "MACHINA_DRIVER_ENDPOINT=unix://"+socket),
		Output: logs,
	})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\ndriver log:\n%s", err, logs.String())
		}
	}()
	// A driver that never stops is killed, so that the test ends.
	kill := p.Kill

	switch moment {
	case atStart:
		if !within(30*time.Second, func() bool { return logs.String() != "" }) {
			kill()
			return errors.New("the driver wrote no log line within 30s")
		}
	case whenIdle, underLoad:
		conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			kill()
			return err
		}
		defer conn.Close()
		if !within(30*time.Second, func() bool { return probe(conn) }) {
			kill()
			return errors.New("the driver did not answer Probe within 30s")
		}
		if moment == underLoad {
			stopLoad := startLoad(conn, 8)
			defer stopLoad()
		}
	}

	p.Signal(sig)
	select {
	case <-p.Exited():
		if p.Err() != nil {
			return fmt.Errorf("exit after %v: %v, want status 0", sig, p.Err())
		}
	case <-time.After(stopBound):
		kill()
		return fmt.Errorf("the driver did not stop within %v of %v", stopBound, sig)
	}
	out := logs.String()
	name := map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}[sig]
	for _, line := range []string{"received " + name + ", stopping gracefully", "stopped"} {
		if !strings.Contains(out, line) {
			return fmt.Errorf("the log has no %q line", line)
		}
	}
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("socket %s still there after exit (%v)", socket, err)
	}
	return nil
}

// within polls cond every 5ms until it holds or timeout passes.
func within(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func probe(conn *grpc.ClientConn) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := driverv1alpha1.NewIdentityServiceClient(conn).Probe(ctx, &driverv1alpha1.ProbeRequest{})
	return err == nil
}

// startLoad runs workers that create, look up and list machines until the
// returned function is called; it returns once the workers have had 40
// answers.
func startLoad(conn *grpc.ClientConn, workers int) (stop func()) {
	machines := driverv1alpha1.NewMachineServiceClient(conn)
	ctx, cancel := context.WithCancel(context.Background())
	var answered atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				req := createRequest("load-"+strconv.Itoa(w)+"-"+strconv.Itoa(n), `{}`)
				if _, err := machines.CreateMachine(ctx, req); err != nil {
					continue
				}
				_, _ = machines.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: req.Machine, MachineClass: req.MachineClass})
				_, _ = machines.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: req.MachineClass})
				answered.Add(1)
			}
		}()
	}
	within(30*time.Second, func() bool { return answered.Load() >= 40 })
	return func() {
		cancel()
		wg.Wait()
	}
}
