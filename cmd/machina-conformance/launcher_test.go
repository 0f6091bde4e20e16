package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// launcherRunLimit bounds one run of the binary in these tests.
const launcherRunLimit = 90 * time.Second

// jsonReport is the part of --json-report these tests read.
type jsonReport struct {
	Passed bool `json:"passed"`
	Tests  []struct {
		Name     string   `json:"name"`
		Status   string   `json:"status"`
		Warnings []string `json:"warnings"`
		Failures []string `json:"failures"`
	} `json:"tests"`
}

// runLauncher runs the binary with args and returns its output, exit code
// and JSON report. The run is killed after launcherRunLimit.
func runLauncher(t *testing.T, bin string, args ...string) (string, int, jsonReport) {
	t.Helper()
	report := filepath.Join(t.TempDir(), "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), launcherRunLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, "--json-report", report)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, ctx.Err(), "the run did not end within %v:\n%s", launcherRunLimit, out.String())
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	var rep jsonReport
	b, err := os.ReadFile(report)
	require.NoError(t, err, "no JSON report:\n%s", out.String())
	require.NoError(t, json.Unmarshal(b, &rep))
	return out.String(), code, rep
}

// launcherChecks are the Launcher checks; every one must run in launcher
// mode.
var launcherChecks = []string{
	"Launcher/endpoint_precedence", "Launcher/stale_socket_removed", "Launcher/live_socket_refused",
	"Launcher/non_socket_refused", "Launcher/socket_directory_modes", "Launcher/socket_mode_at_first_answer",
	"Launcher/sigterm_graceful_stop", "Launcher/restart_keeps_state",
	"Launcher/bad_endpoint_refused", "Launcher/long_path_refused", "Launcher/no_other_files",
	"Launcher/no_tcp_listener",
}

// requireCleanLaunch requires a passed run in which every Launcher check ran
// and passed without a warning.
func requireCleanLaunch(t *testing.T, out string, code int, rep jsonReport) {
	t.Helper()
	require.Equal(t, exitPassed, code, out)
	require.True(t, rep.Passed, out)
	status := map[string]string{}
	for _, tc := range rep.Tests {
		status[tc.Name] = tc.Status
		assert.Empty(t, tc.Warnings, "%s warns", tc.Name)
	}
	for _, name := range launcherChecks {
		assert.Equal(t, "passed", status[name], "%s must run and pass:\n%s", name, out)
	}
}

// buildBrokenDriver builds the inmemory driver with process rules broken on
// purpose (drivers/inmemory/testdata/brokendriver).
func buildBrokenDriver(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+"/", "./testdata/brokendriver")
	cmd.Dir = "../../drivers/inmemory"
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build brokendriver: %s", out)
	return filepath.Join(dir, "brokendriver")
}

// slowCreate makes CreateMachine take a moment, so that the SIGTERM check
// has a call in flight.
const slowCreate = "--fault CreateMachine:latency=300ms"

// processMutant is a breakage of drivers/inmemory/testdata/brokendriver
// (--break), the Launcher check that must report it, with the id of the
// sentence it breaks and a part of the warning.
type processMutant struct {
	breakage, check, id, want string
}

// processMutants are the mutants of the sentences only the Launcher checks
// exercise; "none" is the unbroken program.
var processMutants = []processMutant{
	{"none", "", "", ""},
	{"leave-socket", "Launcher/sigterm_graceful_stop", "R-2.2-exit-remove-socket-file", "is still there"},
	{"remove-file", "Launcher/non_socket_refused", "R-2.2-anything-else-exists-path", "is gone or replaced after the driver ran"},
	{"ignore-sigterm", "Launcher/sigterm_graceful_stop", "R-2.7-finish-within-pod-termination", "still runs 2s after SIGTERM"},
	{"hard-stop", "Launcher/sigterm_graceful_stop", "R-2.7-finish-within-pod-termination", "in flight when the driver got SIGTERM"},
	{"env-over-flag", "Launcher/endpoint_precedence", "R-2.1-accept-flag-environment", "the flag wins"},
	{"keep-stale", "Launcher/stale_socket_removed", "R-2.2-socket-file-exists-path", "with a stale socket at"},
	{"take-over", "Launcher/live_socket_refused", "R-2.2-process-still-accepts-connections", "removed or replaced the socket"},
	{"open-dir", "Launcher/socket_directory_modes", "R-2.2-parent-directory-not-exist", "with permissions for others"},
	{"chmod-dir", "Launcher/socket_directory_modes", "R-2.2-not-change-mode-owner", "changed the mode of the existing directory"},
	{"silent-refusal", "Launcher/bad_endpoint_refused", "R-2.1-refuse-start-message-naming", "without naming the value"},
	{"silent-refusal", "Launcher/long_path_refused", "R-2.2-report-message-naming-path", "without naming the path"},
	{"relative-path", "Launcher/bad_endpoint_refused", "R-2.1-refuse-start-message-naming", "the driver serves on"},
	{"extra-file", "Launcher/no_other_files", "R-2.2-not-create-other-files", "driver.lock"},
	{"tcp-fallback", "Launcher/no_tcp_listener", "R-2.3-listen-tcp-only-operator", "also serves the Driver API on TCP 127.0.0.1:"},
	{"new-ids", "Launcher/restart_keeps_state", "R-2.7-keep-idempotency-contract", "after the restart GetMachineStatus of"},
}

// TestLauncherMode runs the binary in launcher mode, its runs in parallel:
//
//   - the whole suite against the in-memory driver with a state file: every
//     check passes, every Launcher check runs without a warning (the default
//     endpoint included), a create is in flight at SIGTERM, and the restart
//     check sees its VM survive (the state file);
//   - the Launcher checks against the broken driver: unbroken it passes them
//     all without a warning; each breakage (a process mutant: all thirteen
//     sentences only the Launcher checks exercise) is reported by its
//     check with the sentence it breaks. Breaches are warnings for now (Driver API §3.2),
//     so those runs still pass.
func TestLauncherMode(t *testing.T) {
	conf, driver := binaries(t)
	broken := buildBrokenDriver(t)

	t.Run("inmemory", func(t *testing.T) {
		t.Parallel()
		state := filepath.Join(t.TempDir(), "state.json")
		out, code, rep := runLauncher(t, conf,
			"--driver-command", driver+" --log-level ERROR "+slowCreate+" --state-file "+state,
			"--driver-stop-timeout", "10s", "--driver-default-endpoint",
			"--machine-class", filepath.Join(testdata, "machineclass.yaml"),
			"--incompatible-provider-spec", filepath.Join(testdata, "incompatible-providerspec.yaml"),
			"--updated-provider-spec", filepath.Join(testdata, "updated-providerspec.yaml"),
			"--secrets", filepath.Join(testdata, "secrets.yaml"),
			"--volumes", filepath.Join(testdata, "volumes.yaml"),
			"--timeout-ready", "20s", "-v",
		)
		requireCleanLaunch(t, out, code, rep)
		assert.Contains(t, out, "machina-conformance: starting the driver: ")
		assert.NotContains(t, out, "did not survive the restart", "the state file keeps the VM across the restart")
		if strings.Contains(out, "was not tried") {
			// Only something already at the machine's default path (a
			// driver running on it) keeps the check from trying it.
			assert.Contains(t, out, "exists (another driver?)", "the default endpoint is tried")
		}
		assert.NotContains(t, out, "answered before SIGTERM", "a create is in flight at SIGTERM")
	})

	for _, tc := range processMutants {
		t.Run("broken/"+tc.breakage, func(t *testing.T) {
			t.Parallel()
			// The unbroken program runs every Launcher check, a broken one
			// the check that must catch it.
			focus := "^Launcher/"
			if tc.check != "" {
				focus = "^" + regexp.QuoteMeta(tc.check) + "$"
			}
			// A state file lets a VM outlive the process, for the restart
			// check.
			state := filepath.Join(t.TempDir(), "state.json")
			out, code, rep := runLauncher(t, conf,
				"--driver-command", broken+" --break "+tc.breakage+" "+slowCreate+" --state-file "+state,
				"--driver-stop-timeout", "2s", "--focus", focus,
				"--machine-class", filepath.Join(testdata, "machineclass.yaml"),
				"--timeout-ready", "20s",
			)
			if tc.check == "" {
				requireCleanLaunch(t, out, code, rep)
				return
			}
			require.Equal(t, exitPassed, code, "a warning does not fail the run:\n%s", out)
			var warnings []string
			for _, res := range rep.Tests {
				if res.Name == tc.check {
					warnings = res.Warnings
				}
			}
			found := false
			for _, w := range warnings {
				found = found || (strings.Contains(w, "["+tc.id+"]") && strings.Contains(w, tc.want) && strings.Contains(w, tc.id+" says: "))
			}
			assert.True(t, found, "%s must warn with [%s] and %q; warnings: %q\n%s", tc.check, tc.id, tc.want, warnings, out)
			assert.Contains(t, out, "WARNING ["+tc.id+"]")
			assert.Contains(t, out, "they do not fail the run")
		})
	}
}

// launcherOnlyMark is how docs/conformance-matrix.md marks a sentence only
// the Launcher checks exercise (conformance/internal/trace/nomutant.go),
// whose mutants are processes and live here, out of reach of the
// conformance module's TestTraceability.
const launcherOnlyMark = "(no mutant: checked only by launching the driver"

// TestProcessMutantsCoverLauncherSentences requires a process mutant for
// every sentence the matrix marks as checked only by launching the driver,
// so that a new Launcher rule cannot go without one, and each mutant to
// name one of the checks the matrix cites for its sentence.
func TestProcessMutantsCoverLauncherSentences(t *testing.T) {
	matrix, err := os.ReadFile("../../docs/conformance-matrix.md")
	require.NoError(t, err)
	row := regexp.MustCompile("^\\| <a id=\"[^\"]+\"></a>`(R-[^`]+)` \\|")
	checks := map[string]string{} // id -> its row's last cell
	for _, line := range strings.Split(string(matrix), "\n") {
		if m := row.FindStringSubmatch(line); m != nil && strings.Contains(line, launcherOnlyMark) {
			cells := strings.Split(strings.TrimSuffix(line, " |"), " | ")
			checks[m[1]] = cells[len(cells)-1]
		}
	}
	require.NotEmpty(t, checks, "docs/conformance-matrix.md marks no sentence with %q", launcherOnlyMark)
	mutated := map[string]bool{}
	for _, pm := range processMutants {
		if pm.id == "" {
			continue
		}
		mutated[pm.id] = true
		cited, ok := checks[pm.id]
		if assert.True(t, ok, "process mutant %s breaks %s, which the matrix does not mark as checked only by launching", pm.breakage, pm.id) {
			assert.Contains(t, cited, "`"+pm.check+"`", "the matrix does not cite %s for %s", pm.check, pm.id)
		}
	}
	for id := range checks {
		assert.True(t, mutated[id], "%s is checked only by launching the driver and has no process mutant: add a --break to drivers/inmemory/testdata/brokendriver and a row to processMutants", id)
	}
	t.Logf("%d sentences checked only by launching, %d with a process mutant", len(checks), len(mutated))

	// docs/conformance.md §9 states the launcher score; TestLauncherMode
	// proves each row is caught.
	n, breakages := 0, map[string]bool{}
	for _, pm := range processMutants {
		if pm.id != "" {
			n++
			breakages[pm.breakage] = true
		}
	}
	doc, err := os.ReadFile("../../docs/conformance.md")
	require.NoError(t, err)
	assert.Contains(t, strings.Join(strings.Fields(string(doc)), " "),
		fmt.Sprintf("in launcher mode %d of %d process mutants (%d breakages", n, n, len(breakages)), "docs/conformance.md §9 states the launcher score")
}

func TestLauncherUsage(t *testing.T) {
	class := filepath.Join(testdata, "machineclass.yaml")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--machine-class", class, "--driver-command", "x", "--endpoint", "unix:///tmp/x.sock"}, noEnv, &stdout, &stderr)
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr.String(), "--endpoint and --driver-command exclude each other")

	o, err := parseFlags([]string{"--machine-class", class, "--driver-command", "drv --flag", "--driver-stop-timeout", "3s"}, noEnv, &stderr)
	require.NoError(t, err)
	require.NotNil(t, o.cfg.Launch)
	assert.Equal(t, "drv --flag", o.cfg.Launch.Command)
	assert.Equal(t, 3*time.Second, o.cfg.Launch.StopTimeout)
	assert.Empty(t, o.cfg.Endpoint)

	stderr.Reset()
	assert.Equal(t, exitPassed, run(context.Background(), []string{"-h"}, noEnv, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-driver-command")
	assert.Contains(t, stderr.String(), "launcher mode")
}
