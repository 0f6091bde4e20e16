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
// (--break), the Launcher check that must report it, the clause it breaks
// (conformance/internal/trace/clauses.go) as "sentence id#clause", and a
// part of the warning.
type processMutant struct {
	breakage, check, id, want string
}

// sentence is the id of the sentence the mutant breaks, without the clause:
// what its warning names.
func (pm processMutant) sentence() string {
	id, _, _ := strings.Cut(pm.id, "#")
	return id
}

// processMutants are the mutants of the clauses only the Launcher checks
// exercise; "none" is the unbroken program.
var processMutants = []processMutant{
	{"none", "", "", ""},
	{"leave-socket", "Launcher/sigterm_graceful_stop", "R-2.2-exit-remove-socket-file#removed", "is still there"},
	{"remove-file", "Launcher/non_socket_refused", "R-2.2-anything-else-exists-path#kept", "is gone or replaced after the driver ran"},
	{"serve-anyway", "Launcher/non_socket_refused", "R-2.2-anything-else-exists-path#refused", "the driver neither exited nor answered within"},
	{"ignore-sigterm", "Launcher/sigterm_graceful_stop", "R-2.7-finish-within-pod-termination#finish", "still runs 2s after SIGTERM"},
	{"hard-stop", "Launcher/sigterm_graceful_stop", "R-2.7-finish-within-pod-termination#finish", "in flight when the driver got SIGTERM"},
	{"ignore-flag", "Launcher/endpoint_precedence", "R-2.1-accept-flag-environment#flag", "and no MACHINA_DRIVER_ENDPOINT: it did not answer"},
	{"ignore-env", "Launcher/endpoint_precedence", "R-2.1-accept-flag-environment#environment", "and no --endpoint: it did not answer"},
	{"env-over-flag", "Launcher/endpoint_precedence", "R-2.1-accept-flag-environment#precedence", "the flag wins"},
	{"keep-stale", "Launcher/stale_socket_removed", "R-2.2-socket-file-exists-path#removed", "with a stale socket at"},
	{"take-over", "Launcher/live_socket_refused", "R-2.2-process-still-accepts-connections#refused", "removed or replaced the socket"},
	{"open-dir", "Launcher/socket_directory_modes", "R-2.2-parent-directory-not-exist#mode", "with permissions for others"},
	{"chmod-dir", "Launcher/socket_directory_modes", "R-2.2-not-change-mode-owner#mode", "changed the mode of the existing directory"},
	{"chown-dir", "Launcher/socket_directory_modes", "R-2.2-not-change-mode-owner#owner", "changed the owner of the existing directory"},
	{"late-chmod", "Launcher/socket_mode_at_first_answer", "R-2.2-socket-file-have-mode#before-first-call", "when the driver answered its first call its socket"},
	{"silent-refusal", "Launcher/bad_endpoint_refused", "R-2.1-refuse-start-message-naming#naming", "without naming the value"},
	{"silent-refusal", "Launcher/long_path_refused", "R-2.2-report-message-naming-path#naming", "without naming the path"},
	{"relative-path", "Launcher/bad_endpoint_refused", "R-2.1-refuse-start-message-naming#relative-path", "the driver serves on"},
	{"extra-file", "Launcher/no_other_files", "R-2.2-not-create-other-files#none", "driver.lock"},
	{"tcp-fallback", "Launcher/no_tcp_listener", "R-2.3-listen-tcp-only-operator#no-fallback", "also serves the Driver API on TCP 127.0.0.1:"},
	{"tcp-always", "Launcher/no_tcp_listener", "R-2.3-listen-tcp-only-operator#only-explicit", "serving on unix://"},
	{"new-ids", "Launcher/restart_keeps_state", "R-2.7-keep-idempotency-contract#kept", "after the restart GetMachineStatus of"},
}

// TestLauncherMode runs the binary in launcher mode, its runs in parallel:
//
//   - the whole suite against the in-memory driver with a state file: every
//     check passes, every Launcher check runs without a warning (the default
//     endpoint included), a create is in flight at SIGTERM, and the restart
//     check sees its VM survive (the state file);
//   - the Launcher checks against the broken driver: unbroken it passes them
//     all without a warning; each breakage (a process mutant: every clause
//     of the sentences only the Launcher checks exercise) is reported by
//     its check with the sentence it breaks. Breaches are warnings for now (Driver API §3.2),
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
			if tc.breakage == "chown-dir" && os.Geteuid() != 0 {
				t.Skip("chown-dir gives the socket directory another owner, which only root can do; as another user the driver exits with an error before serving, which proves nothing about the owner")
			}
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
			id := tc.sentence()
			found := false
			for _, w := range warnings {
				found = found || (strings.Contains(w, "["+id+"]") && strings.Contains(w, tc.want) && strings.Contains(w, id+" says: "))
			}
			assert.True(t, found, "%s must warn with [%s] and %q; warnings: %q\n%s", tc.check, id, tc.want, warnings, out)
			assert.Contains(t, out, "WARNING ["+id+"]")
			assert.Contains(t, out, "they do not fail the run")
		})
	}
}

// launcherOnlyMark is how docs/conformance-matrix.md marks a sentence only
// the Launcher checks exercise (conformance/internal/trace/nomutant.go),
// whose mutants are processes and live here, out of reach of the
// conformance module's TestTraceability.
const launcherOnlyMark = "(no mutant: checked only by launching the driver"

// processClauseMark is the last cell of a row of the matrix's "## Clauses"
// table whose clause a process mutant proves (a clause with Process: true).
const processClauseMark = "a process mutant, in launcher mode"

// clauseRow is a row of the matrix's "## Clauses" table, as
// | `R-2.1-accept-flag-environment#flag` | MUST accept the flag | a process mutant, in launcher mode |
// (an anchor before the id is allowed).
var clauseRow = regexp.MustCompile("^\\| (?:<a id=\"[^\"]+\"></a>)?`(R-[^`#]+#[^`]+)` \\|")

// matrixProcessClauses returns the id#clause of every row of the matrix's
// "## Clauses" table whose last cell is processClauseMark.
func matrixProcessClauses(matrix string) map[string]bool {
	clauses := map[string]bool{}
	in := false
	for _, line := range strings.Split(matrix, "\n") {
		if strings.HasPrefix(line, "## ") {
			in = strings.TrimSpace(line) == "## Clauses"
			continue
		}
		m := clauseRow.FindStringSubmatch(line)
		if !in || m == nil {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimSpace(line), " |"), " | ")
		if strings.TrimSpace(cells[len(cells)-1]) == processClauseMark {
			clauses[m[1]] = true
		}
	}
	return clauses
}

// TestProcessMutantsCoverLauncherSentences requires a process mutant for
// every sentence the matrix marks as checked only by launching the driver,
// so that a new Launcher rule cannot go without one, and each mutant to
// name one of the checks the matrix cites for its sentence; and, clause by
// clause, a process mutant for every clause the matrix's "## Clauses" table
// says a process mutant proves, and no process mutant of another clause.
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
	processClauses := matrixProcessClauses(string(matrix))
	mutated := map[string]bool{}
	for _, pm := range processMutants {
		if pm.id == "" {
			continue
		}
		id := pm.sentence()
		mutated[id] = true
		cited, ok := checks[id]
		if !ok && processClauses[pm.id] {
			// A sentence a client check exercises too, with a clause
			// only launching proves (R-2.2-socket-file-have-mode): the
			// clause table below covers it.
			continue
		}
		if assert.True(t, ok, "process mutant %s breaks %s, which the matrix does not mark as checked only by launching", pm.breakage, id) {
			assert.Contains(t, cited, "`"+pm.check+"`", "the matrix does not cite %s for %s", pm.check, id)
		}
	}
	for id := range checks {
		assert.True(t, mutated[id], "%s is checked only by launching the driver and has no process mutant: add a --break to drivers/inmemory/testdata/brokendriver and a row to processMutants", id)
	}
	t.Logf("%d sentences checked only by launching, %d sentences with a process mutant", len(checks), len(mutated))

	// Clause by clause: the "## Clauses" table marks the clauses a process
	// mutant proves; each has a row here with its id#clause, and each row
	// here is such a clause.
	assert.NotEmpty(t, processClauses, "docs/conformance-matrix.md has no %q row in its \"## Clauses\" table", processClauseMark)
	proven := map[string]bool{}
	for _, pm := range processMutants {
		if pm.id == "" {
			continue
		}
		proven[pm.id] = true
		assert.True(t, strings.Contains(pm.id, "#") && processClauses[pm.id], "process mutant %s breaks %s, which the matrix's \"## Clauses\" table does not list as proven by %q (an id#clause of conformance/internal/trace/clauses.go with Process: true)", pm.breakage, pm.id, processClauseMark)
	}
	for clause := range processClauses {
		assert.True(t, proven[clause], "the clause %s is proven by a process mutant, and processMutants has no row for it: add a --break to drivers/inmemory/testdata/brokendriver and a row with id %q", clause, clause)
	}
	t.Logf("%d clauses proven by a process mutant in the matrix, %d in processMutants", len(processClauses), len(proven))

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
	score := fmt.Sprintf("in launcher mode %d of %d process mutants (%d breakages", n, n, len(breakages))
	assert.True(t, strings.Contains(strings.Join(strings.Fields(string(doc)), " "), score),
		"docs/conformance.md §9 states the launcher score: it must say %q", score)
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
