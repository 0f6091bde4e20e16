package pythoninmemory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/machina-io/machina/conformance/conformancetest"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// TestSIGTERMAlwaysStopsGracefully starts the driver 50 times, five at a
// time, and sends SIGTERM at start, when idle and under load. Every time the
// driver must act on it: log "stopping gracefully", exit 0 within 15s and
// remove its socket.
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
	conformancetest.CheckStopSignals(t, program(t), conformancetest.StopSignals{
		Runs: 50, Parallel: 5,
		Args:         []string{"--shutdown-grace", "5"},
		Class:        &driverv1alpha1.MachineClass{Name: "small", Namespace: "default", ProviderSpec: []byte(`{}`)},
		LogLines:     conformancetest.ReferenceLogLines,
		BeforeSignal: stopSignalsBlocked,
	})
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
