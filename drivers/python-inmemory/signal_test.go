package pythoninmemory

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

// The moments at which TestSIGTERMAlwaysStopsGracefully sends SIGTERM.
const (
	// atStart: as soon as the driver's first log line appears, while it
	// still binds its socket and starts its server.
	atStart = "at start"
	// whenIdle: once it answers Probe, with no call in flight.
	whenIdle = "when idle"
	// underLoad: while concurrent calls keep its thread pools growing.
	underLoad = "under load"
)

// stopBound is how long a driver may take to exit after SIGTERM. Calls in
// flight are fast here and --shutdown-grace is 5s.
const stopBound = 15 * time.Second

// TestSIGTERMAlwaysStopsGracefully starts the driver 50 times, five at a
// time, and sends SIGTERM at start, when idle and under load. Every time the
// driver must act on it: log "stopping gracefully", exit 0 within stopBound
// and remove its socket.
//
// The driver once waited for a signal handler to set an event. The kernel
// hands a signal sent to a process to any of its threads that does not
// block it; when a gRPC or worker thread took SIGTERM, Python only noted it,
// and the main thread, asleep in Event.wait, never ran the handler: the
// driver served on until killed. Threads start often under load, and a
// starting thread is where a pending signal is most likely to be taken. The
// driver now blocks the stop signals before it starts any thread and waits
// for them with sigwait, so this test also checks that every thread blocks
// them.
func TestSIGTERMAlwaysStopsGracefully(t *testing.T) {
	const runs, parallel = 50, 5
	interpreter, dir := python(t), driverDir(t)
	moments := []string{atStart, whenIdle, underLoad}

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
			errs[i] = stopOnce(interpreter, dir, moments[i%len(moments)])
		}()
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			failed++
			t.Errorf("run %d, SIGTERM %s: %v", i, moments[i%len(moments)], err)
		}
	}
	t.Logf("%d of %d driver processes stopped gracefully after SIGTERM, in %v", runs-failed, runs, time.Since(start).Round(time.Millisecond))
}

// stopOnce starts one driver, sends it SIGTERM at the given moment and
// checks the graceful stop. It returns an error instead of failing the test
// because it runs outside the test's goroutine.
func stopOnce(interpreter, dir, moment string) (err error) {
	sockDir, err := os.MkdirTemp("", "pys")
	if err != nil {
		return err
	}
	defer os.RemoveAll(sockDir)
	socket := filepath.Join(sockDir, "driver.sock")
	logs := &process.Buffer{}
	p, err := process.Start(process.Config{
		Name:   "python driver",
		Path:   interpreter,
		Args:   []string{filepath.Join(dir, "main.py"), "--shutdown-grace", "5"},
		Env:    append(os.Environ(), "MACHINA_DRIVER_ENDPOINT=unix://"+socket, "PYTHONDONTWRITEBYTECODE=1"),
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
		if err := stopSignalsBlocked(p.Pid()); err != nil {
			kill()
			return err
		}
	}

	p.Signal(syscall.SIGTERM)
	select {
	case <-p.Exited():
		if p.Err() != nil {
			return fmt.Errorf("exit after SIGTERM: %v, want status 0", p.Err())
		}
	case <-time.After(stopBound):
		kill()
		return fmt.Errorf("the driver did not stop within %v of SIGTERM", stopBound)
	}
	out := logs.String()
	for _, line := range []string{"received SIGTERM, stopping gracefully", "stopped"} {
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
// answers, so that the driver's thread pools have grown.
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

// stopSignalsBlocked checks that every thread of process pid but the main
// one blocks SIGTERM and SIGINT, so that only the main thread's sigwait
// takes them. (While a thread waits in sigwait, the kernel shows the
// signals it waits for as unblocked.)
func stopSignalsBlocked(pid int) error {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	if err != nil || len(tasks) == 0 {
		return fmt.Errorf("listing the threads of %d: %v", pid, err)
	}
	want := uint64(1)<<(syscall.SIGTERM-1) | uint64(1)<<(syscall.SIGINT-1)
	for _, task := range tasks {
		if filepath.Base(filepath.Dir(task)) == strconv.Itoa(pid) {
			continue
		}
		status, err := os.ReadFile(task)
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread has ended
		}
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(status), "\n") {
			hex, ok := strings.CutPrefix(line, "SigBlk:")
			if !ok {
				continue
			}
			blocked, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				return fmt.Errorf("%s: %v", task, err)
			}
			if blocked&want != want {
				return fmt.Errorf("thread %s does not block SIGTERM and SIGINT (SigBlk %s): it could take the stop signal", filepath.Base(filepath.Dir(task)), strings.TrimSpace(hex))
			}
		}
	}
	return nil
}
