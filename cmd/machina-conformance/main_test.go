package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// testdata is the directory of the sample files docs/conformance.md uses.
const testdata = "../../conformance/testdata"

func noEnv(string) string { return "" }

// inmemoryFixtures are the flags of every sample file for the in-memory
// driver, the command line docs/conformance.md shows.
var inmemoryFixtures = []string{
	"--machine-class", filepath.Join(testdata, "machineclass.yaml"),
	"--incompatible-provider-spec", filepath.Join(testdata, "incompatible-providerspec.yaml"),
	"--updated-provider-spec", filepath.Join(testdata, "updated-providerspec.yaml"),
	"--secrets", filepath.Join(testdata, "secrets.yaml"),
	"--volumes", filepath.Join(testdata, "volumes.yaml"),
	"--node-template", filepath.Join(testdata, "nodetemplate.yaml"),
	"--user-data", filepath.Join(testdata, "userdata.sh"),
}

func TestUsageErrors(t *testing.T) {
	class := filepath.Join(testdata, "machineclass.yaml")
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"no class":          {[]string{}, "--machine-class is required"},
		"unknown flag":      {[]string{"--nope"}, "flag provided but not defined: -nope"},
		"stray argument":    {[]string{"--machine-class", class, "extra"}, `unexpected arguments: ["extra"]`},
		"bad focus":         {[]string{"--machine-class", class, "--focus", "("}, "--focus: error parsing regexp"},
		"missing file":      {[]string{"--machine-class", "nope.yaml"}, "--machine-class: open nope.yaml"},
		"bad secrets file":  {[]string{"--machine-class", class, "--secrets", class}, "--secrets:"},
		"bad endpoint":      {[]string{"--machine-class", class, "--endpoint", "http://x"}, "want unix:///path/to/socket or tcp://host:port"},
		"bad prefix":        {[]string{"--machine-class", class, "--name-prefix", "UPPER"}, "NamePrefix"},
		"bad duration":      {[]string{"--machine-class", class, "--timeout-create", "soon"}, "invalid value \"soon\" for flag -timeout-create"},
		"volumes not found": {[]string{"--machine-class", class, "--volumes", "none.yaml"}, "--volumes: open none.yaml"},
	} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tc.args, noEnv, &stdout, &stderr)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr.String(), tc.want)
			assert.Empty(t, stdout.String(), "nothing runs")
		})
	}
}

func TestHelpAndList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, exitPassed, run(context.Background(), []string{"-h"}, noEnv, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "Exit code: 0 all checks passed")
	assert.Contains(t, stderr.String(), "-junit-report")

	stdout.Reset()
	assert.Equal(t, exitPassed, run(context.Background(), []string{"--list", "--focus", "^DeleteMachine/", "--skip", "invalid"}, noEnv, &stdout, &stderr))
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	require.Len(t, lines, 8, stdout.String()) // header and seven tests
	assert.Regexp(t, `^TEST\s+SECTION\s+CAPABILITY\s+CHECKS$`, lines[0])
	assert.Regexp(t, `^DeleteMachine/removes_vm\s+§6\.3\.3\s+REQUIRED\s+`, lines[1])
}

func TestEndpointFromEnvironment(t *testing.T) {
	o, err := parseFlags([]string{"--machine-class", filepath.Join(testdata, "machineclass.yaml")},
		func(k string) string {
			if k == endpointEnv {
				return "unix:///tmp/from-env.sock"
			}
			return ""
		}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "unix:///tmp/from-env.sock", o.cfg.Endpoint)
}

// binaries builds machina-conformance and the in-memory driver once per
// test binary run.
func binaries(t *testing.T) (conformanceBin, driverBin string) {
	t.Helper()
	dir := t.TempDir()
	build := func(moduleDir, pkg string) {
		cmd := exec.Command("go", "build", "-o", dir+"/", pkg)
		cmd.Dir = moduleDir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go build %s: %s", pkg, out)
	}
	build(".", ".")
	build("../../drivers/inmemory", "./cmd/machina-driver-inmemory")
	return filepath.Join(dir, "machina-conformance"), filepath.Join(dir, "machina-driver-inmemory")
}

// startDriver starts the in-memory driver on a socket in a fresh directory
// and stops it when the test ends.
func startDriver(t *testing.T, bin string, args ...string) (endpoint string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "mconf")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	endpoint = "unix://" + filepath.Join(dir, "driver.sock")
	cmd := exec.Command(bin, append([]string{"--endpoint", endpoint, "--log-level", "WARN"}, args...)...)
	// The driver logs every failed call; show its log only when the test
	// fails.
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("driver log:\n%s", log.String())
		}
	})
	// machina-conformance waits for the socket itself (--timeout-ready);
	// nothing to wait for here.
	return endpoint
}

// TestAgainstInMemoryDriver runs the binary as docs/conformance.md shows,
// against the in-memory driver, and checks the exit code and the reports.
func TestAgainstInMemoryDriver(t *testing.T) {
	conf, driver := binaries(t)

	t.Run("conforming driver", func(t *testing.T) {
		endpoint := startDriver(t, driver)
		reports := t.TempDir()
		out, code := runBinary(t, conf, append([]string{"--endpoint", endpoint,
			"--junit-report", filepath.Join(reports, "junit.xml"),
			"--json-report", filepath.Join(reports, "report.json"),
		}, inmemoryFixtures...)...)
		require.Equal(t, exitPassed, code, out)
		assert.Contains(t, out, "--- PASS  CreateMachine/idempotent")
		assert.Contains(t, out, "--- PASS  UpdateMachine/applies_in_place")
		assert.Contains(t, out, "--- PASS  UpdateMachine/needs_new_vm")
		assert.Contains(t, out, "RESULT: PASS")

		var rep struct {
			Passed bool `json:"passed"`
			Totals struct{ Passed, Failed, Skipped int }
			Driver struct{ Name string }
		}
		data, err := os.ReadFile(filepath.Join(reports, "report.json"))
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(data, &rep))
		assert.True(t, rep.Passed)
		assert.Equal(t, "inmemory.driver.machina.io", rep.Driver.Name)
		assert.Zero(t, rep.Totals.Failed)
		assert.Greater(t, rep.Totals.Passed, 30)

		var junit struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		}
		data, err = os.ReadFile(filepath.Join(reports, "junit.xml"))
		require.NoError(t, err)
		require.NoError(t, xml.Unmarshal(data, &junit))
		assert.Equal(t, rep.Totals.Passed+rep.Totals.Skipped, junit.Tests)
		assert.Zero(t, junit.Failures)
		assert.Empty(t, listVMs(t, endpoint), "every VM of the run is deleted")
	})

	t.Run("no optional capability", func(t *testing.T) {
		endpoint := startDriver(t, driver, "--disable-capability", "initialize,list,volumes")
		out, code := runBinary(t, conf, "--endpoint", endpoint,
			"--machine-class", filepath.Join(testdata, "machineclass.yaml"),
			"--incompatible-provider-spec", filepath.Join(testdata, "incompatible-providerspec.yaml"))
		require.Equal(t, exitPassed, code, out)
		assert.Contains(t, out, "--- PASS  Capabilities/unadvertised_rpcs_unimplemented")
		assert.Contains(t, out, "--- SKIP  ListMachines/contains_created: the driver does not advertise TYPE_LIST_MACHINES")
	})

	t.Run("faulty driver", func(t *testing.T) {
		// Every GetMachineStatus answers INTERNAL: a broken driver.
		endpoint := startDriver(t, driver, "--fault", "GetMachineStatus:code=INTERNAL")
		out, code := runBinary(t, conf, "--endpoint", endpoint,
			"--machine-class", filepath.Join(testdata, "machineclass.yaml"),
			"--focus", "^GetMachineStatus/")
		assert.Equal(t, exitFailed, code, out)
		assert.Contains(t, out, "--- FAIL  GetMachineStatus/unknown_machine")
		assert.Contains(t, out, `§6.4.3 GetMachineStatus of an unknown machine answers NOT_FOUND: GetMachineStatus of conformance-`)
		assert.Contains(t, out, "RESULT: FAIL")
	})

	t.Run("interrupted", func(t *testing.T) {
		// Slow creates keep the run busy long enough to interrupt it
		// while a test that created VMs runs.
		endpoint := startDriver(t, driver, "--fault", "CreateMachine:latency=300ms")
		cmd := exec.Command(conf, "-v", "--endpoint", endpoint,
			"--machine-class", filepath.Join(testdata, "machineclass.yaml"),
			"--incompatible-provider-spec", filepath.Join(testdata, "incompatible-providerspec.yaml"))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		var out strings.Builder
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			out.WriteString(line + "\n")
			// By now the shared VM exists and the running test creates
			// one more: both must be deleted.
			if !signalled && strings.HasPrefix(line, "=== RUN   ListMachines/contains_created") {
				require.NoError(t, cmd.Process.Signal(os.Interrupt))
				signalled = true
			}
		}
		err = cmd.Wait()
		require.True(t, signalled, "the run reached ListMachines/contains_created:\n%s", out.String())
		var exit *exec.ExitError
		require.True(t, errors.As(err, &exit), "exit status: %v", err)
		assert.Equal(t, exitFailed, exit.ExitCode())
		assert.Contains(t, stderr.String(), "interrupted; finishing the running test and deleting the VMs created so far")
		assert.Contains(t, out.String(), "--- SKIP  DeleteMachine/removes_vm (interrupted)")
		assert.Contains(t, out.String(), "RESULT: INTERRUPTED")
		assert.Empty(t, listVMs(t, endpoint), "the VMs created before the interrupt are deleted")
	})
}

// runBinary runs machina-conformance and returns its output and exit code.
func runBinary(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &exit):
		return out.String(), exit.ExitCode()
	}
	require.NoError(t, err)
	return "", -1
}

// listVMs lists the VMs of the sample class through the driver's own API.
func listVMs(t *testing.T, endpoint string) []string {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer func() { _ = conn.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := driverv1alpha1.NewMachineServiceClient(conn).ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{
		MachineClass: &driverv1alpha1.MachineClass{Name: "conformance-small", Namespace: "default", ProviderSpec: []byte(`{}`)},
	})
	require.NoError(t, err)
	var out []string
	for _, m := range resp.GetMachines() {
		out = append(out, m.GetMachineName())
	}
	return out
}

// TestDocumentedFlags keeps the flag table of docs/conformance.md in step
// with the binary.
func TestDocumentedFlags(t *testing.T) {
	doc, err := os.ReadFile("../../docs/conformance.md")
	require.NoError(t, err)
	var help bytes.Buffer
	run(context.Background(), []string{"-h"}, noEnv, io.Discard, &help)
	for _, line := range strings.Split(help.String(), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "-") {
			continue
		}
		name := strings.Fields(strings.TrimPrefix(line, "-"))[0]
		prefix := "--"
		if len(name) == 1 {
			prefix = "-"
		}
		assert.True(t, strings.Contains(string(doc), "| `"+prefix+name+"` |"), "docs/conformance.md lacks the flag %s%s", prefix, name)
	}
}
