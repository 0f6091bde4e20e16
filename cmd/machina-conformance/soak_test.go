package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/node-inmemory/nodesetup"
)

// Soak settings. `make test` runs soakRunsDefault runs per driver;
// `make conformance-soak` sets more (docs/conformance.md, "No false
// failures").
const (
	soakRunsEnv       = "MACHINA_CONFORMANCE_SOAK_RUNS"
	soakParallelEnv   = "MACHINA_CONFORMANCE_SOAK_PARALLEL"
	soakRunsDefault   = 50
	soakParallel      = 3
	soakLauncherEvery = 10 // every tenth run lets the suite start the driver itself
	soakRunLimit      = 3 * time.Minute
)

// soakDriver is a correct reference driver and how the binary is pointed at
// it.
type soakDriver struct {
	// command starts the driver; the suite or the test appends
	// --endpoint.
	command []string
	// args are the binary's flags for the driver's class and fixtures.
	args []string
	// launcherArgs are added in launcher mode (the class with a slow
	// create, so that a create is in flight at SIGTERM, a state file).
	launcherArgs func(t *testing.T) []string
	stopTimeout  string
}

// TestConformanceSoak runs the whole suite many times against each correct
// reference driver (the Go in-memory driver, the virtualnode driver on a
// real kube-apiserver, the Python and the Node.js drivers) and requires every run to pass
// without a single failed check or warning: the suite must never fail a
// conforming driver, also under load, with other concurrency settings, and
// in launcher mode. Runs go soakParallel at a time; each gets a driver
// process of its own (every tenth in launcher mode, where the suite starts
// and stops the driver itself and runs the Launcher checks).
func TestConformanceSoak(t *testing.T) {
	runs := envInt(t, soakRunsEnv, soakRunsDefault)
	parallel := envInt(t, soakParallelEnv, soakParallel)
	conf, inmemory := binaries(t)

	t.Run("inmemory", func(t *testing.T) {
		soak(t, conf, runs, parallel, soakDriver{
			command: []string{inmemory, "--log-level", "ERROR"},
			args:    inmemoryFixtures,
			launcherArgs: func(t *testing.T) []string {
				state := filepath.Join(t.TempDir(), "state.json")
				return []string{"--driver-command", inmemory + " --log-level ERROR " + slowCreate + " --state-file " + state}
			},
			stopTimeout: "10s",
		})
	})

	t.Run("virtualnode", func(t *testing.T) {
		env := testenv.Start(t, testenv.WithoutCRDs())
		driver := buildVirtualNode(t)
		vn := filepath.Join(testdata, "virtualnode")
		soak(t, conf, runs, parallel, soakDriver{
			command: []string{driver, "--target-kubeconfig", env.Kubeconfig},
			args: []string{
				"--machine-class", filepath.Join(vn, "machineclass.yaml"),
				"--incompatible-provider-spec", filepath.Join(vn, "incompatible-providerspec.yaml"),
				"--secrets", filepath.Join(testdata, "secrets.yaml"),
				"--volumes", filepath.Join(vn, "volumes.yaml"),
				"--node-template", filepath.Join(testdata, "nodetemplate.yaml"),
				"--user-data", filepath.Join(testdata, "userdata.sh"),
			},
			launcherArgs: func(*testing.T) []string {
				return []string{"--driver-command", driver + " --target-kubeconfig " + env.Kubeconfig}
			},
			stopTimeout: "20s",
		})
	})

	t.Run("python", func(t *testing.T) {
		py := pythonWithGRPC(t)
		dir, err := filepath.Abs("../../drivers/python-inmemory")
		require.NoError(t, err)
		soakScripted(t, conf, runs, parallel, dir, "python",
			[]string{"env", "PYTHONDONTWRITEBYTECODE=1", py, filepath.Join(dir, "main.py")})
	})

	t.Run("node", func(t *testing.T) {
		dir, err := filepath.Abs("../../drivers/node-inmemory")
		require.NoError(t, err)
		nodeBin, err := nodesetup.Node(dir)
		require.NoError(t, err, "the Node.js driver cannot run")
		soakScripted(t, conf, runs, parallel, dir, "node", []string{nodeBin, filepath.Join(dir, "main.js")})
	})
}

// soakScripted soaks one of the in-memory drivers of another language
// (drivers/<lang>-inmemory, run by command). Both change tags on a running
// VM and nothing else (their READMEs); in launcher mode createDelay makes a
// create take a moment, so that one is in flight at SIGTERM.
func soakScripted(t *testing.T, conf string, runs, parallel int, dir, lang string, command []string) {
	t.Helper()
	fixtures := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(fixtures, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	updated := write("updated.json", `{"size":"small","tags":{"team":"conformance"}}`)
	needsNew := write("needs-new.json", `{"size":"large"}`)
	slowClass := write("class.yaml", fmt.Sprintf("name: %[1]s-conformance\nprovider: %[1]s-inmemory\nproviderSpec:\n  size: small\n  createDelay: 0.3\n", lang))
	slowUpdated := write("slow-updated.json", `{"size":"small","createDelay":0.3,"tags":{"team":"conformance"}}`)
	soak(t, conf, runs, parallel, soakDriver{
		command: command,
		args: []string{
			"--machine-class", filepath.Join(dir, "testdata", "machineclass.yaml"),
			"--volumes", filepath.Join(dir, "testdata", "volumes.yaml"),
			"--secrets", filepath.Join(testdata, "secrets.yaml"),
			"--updated-provider-spec", updated,
			"--needs-new-vm-provider-spec", needsNew,
			"--timeout-ready", "30s",
		},
		launcherArgs: func(*testing.T) []string {
			return []string{
				"--driver-command", strings.Join(command, " ") + " --shutdown-grace 10",
				"--machine-class", slowClass, "--updated-provider-spec", slowUpdated,
			}
		},
		stopTimeout: "20s",
	})
}

// soak runs the suite runs times against d, parallel at a time, and
// requires every run to pass without a warning. Run i sets --concurrency
// 1 + i%5 and --idempotent-count 2 + i%3.
func soak(t *testing.T, conf string, runs, parallel int, d soakDriver) {
	t.Helper()
	type failure struct {
		run  int
		args string
		out  string
	}
	var (
		mu       sync.Mutex
		failures []failure
		launched int
		wg       sync.WaitGroup
	)
	slots := make(chan struct{}, parallel)
	start := time.Now()
	for i := range runs {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			args := append([]string{
				"--concurrency", strconv.Itoa(1 + i%5),
				"--idempotent-count", strconv.Itoa(2 + i%3),
			}, d.args...)
			launcher := i%soakLauncherEvery == soakLauncherEvery-1
			if launcher {
				args = append(args, d.launcherArgs(t)...)
				args = append(args, "--driver-stop-timeout", d.stopTimeout, "--timeout-ready", "30s")
			} else {
				args = append(args, "--endpoint", startSoakDriver(t, d.command))
			}
			out, passed := runSoak(t, conf, args)
			mu.Lock()
			defer mu.Unlock()
			if launcher {
				launched++
			}
			if !passed {
				failures = append(failures, failure{i, strings.Join(args, " "), out})
			}
		}()
	}
	wg.Wait()
	t.Logf("%d runs (%d in launcher mode), %d at a time, in %v: %d failed",
		runs, launched, parallel, time.Since(start).Round(time.Second), len(failures))
	for _, f := range failures {
		t.Errorf("run %d failed a conforming driver (machina-conformance %s):\n%s", f.run, f.args, f.out)
	}
}

// runSoak runs the binary once and tells whether it passed without a
// failed check or a warning; a run that passes prints "RESULT: PASS" and,
// with a warning, "WARNING [".
func runSoak(t *testing.T, conf string, args []string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), soakRunLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, conf, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		return fmt.Sprintf("the run did not end within %v:\n%s", soakRunLimit, out.String()), false
	}
	text := out.String()
	ok := err == nil && strings.Contains(text, "RESULT: PASS") && !strings.Contains(text, "WARNING [")
	if !ok {
		t.Logf("exit: %v", err)
	}
	return text, ok
}

// startSoakDriver starts command with a socket of its own and stops it
// (SIGTERM) when the test ends.
func startSoakDriver(t *testing.T, command []string) string {
	dir, err := os.MkdirTemp("", "msoak")
	if err != nil {
		t.Error(err)
		return ""
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint := "unix://" + filepath.Join(dir, "driver.sock")
	cmd := exec.Command(command[0], append(command[1:], "--endpoint", endpoint)...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Error(err)
		return endpoint
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() && log.Len() > 0 {
			t.Logf("driver log (%s):\n%s", endpoint, log.String())
		}
	})
	return endpoint
}

// pythonWithGRPC returns the interpreter the Python driver runs on
// ($MACHINA_PYTHON or /usr/bin/python3, as its own tests), failing the test
// when it lacks grpc and protobuf (`make deps` installs them).
func pythonWithGRPC(t *testing.T) string {
	t.Helper()
	py := os.Getenv("MACHINA_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	out, err := exec.Command(py, "-c", "import grpc, google.protobuf").CombinedOutput()
	require.NoError(t, err, "the Python driver needs %s with grpc and protobuf (make deps):\n%s", py, out)
	return py
}

// envInt reads a positive count from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "%s", name)
	assert.Positive(t, n, "%s", name)
	return max(n, 1)
}
