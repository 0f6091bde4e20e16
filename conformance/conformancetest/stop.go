package conformancetest

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// The moments at which CheckStopSignals sends a signal.
const (
	// atStart: as soon as the driver's first log line appears, while it
	// still starts (loads, binds its socket, starts its server).
	atStart = "at start"
	// whenIdle: once it answers Probe, with no call in flight.
	whenIdle = "when idle"
	// underLoad: while concurrent calls keep it busy.
	underLoad = "under load"
)

// StopSignals says how CheckStopSignals runs a program.
type StopSignals struct {
	// Runs drivers are started, Parallel at a time.
	Runs, Parallel int
	// Signals are sent in turn (SIGTERM when empty).
	Signals []syscall.Signal
	// Args are the driver's flags, e.g. a short grace period.
	Args []string
	// Bound is how long the stop may take (15s when zero).
	Bound time.Duration
	// Class is the machine class of the load's calls.
	Class *driverv1alpha1.MachineClass
	// LogLines, when set, are the lines the driver's log must show once
	// it stopped after the signal named sig ("SIGTERM").
	LogLines func(sig string) []string
	// BeforeSignal, when set, runs once the driver serves (idle or under
	// load), right before the signal; an error fails the run.
	BeforeSignal func(pid int) error
}

// ReferenceLogLines are the lines the reference drivers log on a graceful
// stop.
func ReferenceLogLines(sig string) []string {
	return []string{"received " + sig + ", stopping gracefully", "stopped"}
}

// CheckStopSignals starts the program o.Runs times and sends it a stop
// signal at start, when idle and under load. Every time the driver must act
// on it (Driver API §2.7): exit with status 0 within o.Bound, remove its
// socket, and log o.LogLines.
func CheckStopSignals(t *testing.T, p Program, o StopSignals) {
	t.Helper()
	if len(o.Signals) == 0 {
		o.Signals = []syscall.Signal{syscall.SIGTERM}
	}
	if o.Bound == 0 {
		o.Bound = 15 * time.Second
	}
	moments := []string{atStart, whenIdle, underLoad}
	errs := make([]error, o.Runs)
	slots := make(chan struct{}, max(o.Parallel, 1))
	var wg sync.WaitGroup
	start := time.Now()
	for i := range errs {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			errs[i] = stopOnce(p, o, moments[i%len(moments)], o.Signals[(i/len(moments))%len(o.Signals)])
		})
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			t.Errorf("run %d, %v %s: %v", i, o.Signals[(i/len(moments))%len(o.Signals)], moments[i%len(moments)], err)
		}
	}
	t.Logf("%d of %d driver processes stopped gracefully after the signal, in %v", o.Runs-failed, o.Runs, time.Since(start).Round(time.Millisecond))
}

// signalNames are the names the reference drivers log.
var signalNames = map[syscall.Signal]string{syscall.SIGTERM: "SIGTERM", syscall.SIGINT: "SIGINT"}

// stopOnce starts one driver, sends it sig at the given moment and checks
// the graceful stop. It returns an error instead of failing the test
// because it runs outside the test's goroutine.
func stopOnce(p Program, o StopSignals, moment string, sig syscall.Signal) (err error) {
	sockDir, err := os.MkdirTemp("", "stp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(sockDir)
	socket := filepath.Join(sockDir, "driver.sock")
	logs := &Buffer{}
	proc, err := p.startChild("unix://"+socket, logs, o.Args)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\ndriver log:\n%s", err, logs.String())
		}
	}()
	// A driver that never stops is killed, so that the test ends.
	kill := proc.Kill

	switch moment {
	case atStart:
		if !withinStartTimeout(func() bool { return logs.String() != "" }) {
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
		if !withinStartTimeout(func() bool { return probe(conn) }) {
			kill()
			return errors.New("the driver did not answer Probe within 30s")
		}
		if moment == underLoad {
			stopLoad := startLoad(conn, o.Class, 8)
			defer stopLoad()
		}
		if o.BeforeSignal != nil {
			if err := o.BeforeSignal(proc.Pid()); err != nil {
				kill()
				return err
			}
		}
	}

	proc.Signal(sig)
	select {
	case <-proc.Exited():
		if proc.Err() != nil {
			return fmt.Errorf("exit after %v: %v, want status 0", sig, proc.Err())
		}
	case <-time.After(o.Bound):
		kill()
		return fmt.Errorf("the driver did not stop within %v of %v", o.Bound, sig)
	}
	if o.LogLines != nil {
		out := logs.String()
		for _, line := range o.LogLines(signalNames[sig]) {
			if !strings.Contains(out, line) {
				return fmt.Errorf("the log has no %q line", line)
			}
		}
	}
	if _, err := os.Lstat(socket); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("socket %s still there after exit (%v)", socket, err)
	}
	return nil
}

// startTimeout bounds each wait of a driver's start: its first log line,
// its first answer, the load's first answers.
const startTimeout = 30 * time.Second

// withinStartTimeout polls cond every 5ms until it holds or startTimeout
// passes.
func withinStartTimeout(cond func() bool) bool {
	deadline := time.Now().Add(startTimeout)
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

// startLoad runs workers that create, look up and list machines of class
// until the returned function is called; it returns once the workers have
// had 40 answers.
func startLoad(conn *grpc.ClientConn, class *driverv1alpha1.MachineClass, workers int) (stop func()) {
	machines := driverv1alpha1.NewMachineServiceClient(conn)
	ctx, cancel := context.WithCancel(context.Background())
	var answered atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				req := &driverv1alpha1.CreateMachineRequest{
					Machine:      &driverv1alpha1.Machine{Name: "load-" + strconv.Itoa(w) + "-" + strconv.Itoa(n), Namespace: class.GetNamespace()},
					MachineClass: proto.Clone(class).(*driverv1alpha1.MachineClass),
				}
				if _, err := machines.CreateMachine(ctx, req); err != nil {
					continue
				}
				_, _ = machines.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: req.Machine, MachineClass: req.MachineClass})
				_, _ = machines.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: req.MachineClass})
				answered.Add(1)
			}
		})
	}
	withinStartTimeout(func() bool { return answered.Load() >= 40 })
	return func() {
		cancel()
		wg.Wait()
	}
}

// CheckSuccessorsSocketKept starts the program, puts another socket at its
// path (a successor, a careless start script, an operator) and stops it: a
// stopping driver must remove only its own socket (Driver API §2.2),
// while runtimes such as gRPC core or Node.js unlink whatever is at the
// path they bound.
func CheckSuccessorsSocketKept(t *testing.T, p Program, args ...string) {
	t.Helper()
	d := p.Start(t, args...)
	if err := os.Remove(d.Socket); err != nil {
		t.Fatal(err)
	}
	successor, err := net.Listen("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	successor.(*net.UnixListener).SetUnlinkOnClose(false)
	t.Cleanup(func() { _ = successor.Close() })
	theirs, err := os.Lstat(d.Socket)
	if err != nil {
		t.Fatal(err)
	}

	d.Signal(syscall.SIGTERM)
	if code := d.Wait(t, 30*time.Second); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
	now, err := os.Lstat(d.Socket)
	switch {
	case err != nil:
		t.Errorf("the successor's socket must survive the stop: %v", err)
	case !os.SameFile(theirs, now):
		t.Error("the file at the path is not the successor's socket any more")
	}
}

// CheckPromptStopAfterClientLeft closes a client's connection and sends
// SIGTERM at once, as a stopping core pod or the conformance launcher does,
// runs times: the driver, started with args that give it grace (its grace
// period), must not wait out that period for the session of a client that
// is gone. grpc-js's tryShutdown does when the session's 'close' event is
// still queued at the signal.
func CheckPromptStopAfterClientLeft(t *testing.T, p Program, runs int, grace time.Duration, args ...string) {
	t.Helper()
	for i := range runs {
		d := p.Start(t, args...)
		conn := Dial(t, d.Endpoint)
		if _, err := driverv1alpha1.NewIdentityServiceClient(conn).GetPluginInfo(context.Background(), &driverv1alpha1.GetPluginInfoRequest{}); err != nil {
			t.Fatalf("run %d: GetPluginInfo: %v", i, err)
		}
		if err := conn.Close(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		d.Signal(syscall.SIGTERM)
		if code := d.Wait(t, 2*grace); code != 0 {
			t.Fatalf("run %d: exit status %d after SIGTERM, want 0", i, code)
		}
		if took := time.Since(start); took >= grace/2 {
			t.Errorf("run %d: the stop took %v, at least half the grace period %v: it waited for a client that had left", i, took.Round(time.Millisecond), grace)
		}
	}
}
