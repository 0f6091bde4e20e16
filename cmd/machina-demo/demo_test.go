//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/cmd/internal/nodeimage"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// These tests run the demo as `make demo` does: the real binaries, built
// from this work tree, as processes on a real API server.

// binaries builds the manager, the virtualnode driver, the node agent and
// the demo once for all tests of the package.
var binaries = sync.OnceValues(func() (string, error) {
	root, err := manifests.RepoRoot(".")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "machina-demo-test-bin-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	cmd := exec.Command("go", "build", "-o", dir+"/",
		"./cmd/machina-manager", "./drivers/virtualnode/cmd/machina-driver-virtualnode", "./cmd/machina-node-agent", "./cmd/machina-demo")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &buildError{out: string(out), err: err}
	}
	return dir, nil
})

// builtDir is the directory binaries built into, if it ran.
var builtDir string

// TestMain removes the binaries after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if builtDir != "" {
		_ = os.RemoveAll(builtDir)
	}
	os.Exit(code)
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// demoProcess is a running demo whose output the test reads.
type demoProcess struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

func startDemo(t *testing.T, args ...string) *demoProcess {
	t.Helper()
	assets := testenv.Assets(t)
	bin, err := binaries()
	require.NoError(t, err)
	root, err := manifests.RepoRoot(".")
	require.NoError(t, err)

	out := &syncBuffer{}
	cmd := exec.Command(filepath.Join(bin, "machina-demo"),
		append([]string{"--repo=" + root, "--bin=" + bin, "--assets=" + assets, "--timeout=3m"}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	p := &demoProcess{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		// A failed test must not leave the demo running either.
		_ = cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("demo output:\n%s", out.String())
		}
	})
	return p
}

// wait waits for the demo to exit and returns its exit code.
func (p *demoProcess) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(timeout):
		require.FailNow(t, "the demo did not exit", "within %s", timeout)
		return -1
	}
}

// waitOutput waits until the demo printed s.
func (p *demoProcess) waitOutput(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.out.String(), s) {
		select {
		case <-p.done:
			require.FailNow(t, "the demo exited early", "exit code %d before printing %q", p.cmd.ProcessState.ExitCode(), s)
		case <-time.After(100 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the demo did not print %q within %s", s, timeout)
	}
}

var socketLine = regexp.MustCompile(`unix://(/\S+)/driver\.sock`)

// workDir returns the demo's work directory, read from the driver's
// endpoint it prints.
func (p *demoProcess) workDir(t *testing.T) string {
	t.Helper()
	m := socketLine.FindStringSubmatch(p.out.String())
	require.NotNil(t, m, "the demo prints the driver's socket")
	require.True(t, strings.HasPrefix(filepath.Base(m[1]), workDirPrefix), m[1])
	return m[1]
}

// processesUsing lists the command lines of processes that name dir: the
// demo's etcd, kube-apiserver, driver and manager all do.
func processesUsing(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var found []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		if cmdline := string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})); strings.Contains(cmdline, dir) {
			found = append(found, cmdline)
		}
	}
	return found
}

func TestDemoRunsTheLifecycleAndLeavesNothing(t *testing.T) {
	p := startDemo(t)
	code := p.wait(t, 8*time.Minute)
	out := p.out.String()
	require.Equal(t, exitOK, code, "demo output:\n%s", out)
	for _, want := range []string{
		"3 machines of class virtualnode-small Running, their Nodes Ready",
		"held by the budget: the new machine Running, every old one kept, Progressing naming the budget",
		"rolled out: 3 machines of class virtualnode-large, the old machines and their Nodes gone",
		"updated in place: the same 3 machines, now in the MachineSet of template demo.machina.io/config=v2, their Nodes updated by their agents",
		"pool worker updated 2 nodes, one at a time, and waits for the hook on ",
		"pool worker Updated: its rendered configuration on all 3 nodes, one node at a time",
		"scaled to zero: every machine drained and deleted, every Node gone",
		"The demo went through the whole lifecycle",
	} {
		assert.Contains(t, out, want)
	}
	assert.Equal(t, 7, strings.Count(out, "] Done in "), "seven steps, each reported once")

	// The MachineConfigs of deploy/examples/machineconfig are on the root
	// of every node's agent: the file, the unit and its enablement, the SSH
	// key, the kernel argument in the boot entry; each node rebooted once.
	// The demo prints what changed on each root before it removes them.
	roots := regexp.MustCompile(`node (\S+) \(root (\S+)\): actions "drain, reboot", systemctl asked: reboot\n`).FindAllStringSubmatch(out, -1)
	require.Len(t, roots, replicas, "one root per node of the pool")
	for _, want := range []string{
		`/etc/chrony.d/example.conf 0644 "server time.example.com iburst\n"`,
		`/etc/systemd/system/example-hello.service 0644 "[Unit]\nDescription=Say hello once at boot\n\n[Service]\nType=oneshot\n` +
			`ExecStart=/usr/bin/echo hello\n\n[Install]\nWantedBy=multi-user.target\n"`,
		`/etc/systemd/system/multi-user.target.wants/example-hello.service -> /etc/systemd/system/example-hello.service`,
		`/home/core/.ssh/authorized_keys.d/ignition 0600 "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHmachinaDemoKeyReplaceWithYours admin@example.com\n"`,
		`options ` + nodeimage.BootOptions + ` nosmt\n"`,
	} {
		assert.Equal(t, replicas, strings.Count(out, want), "on every node's root: %s", want)
	}
	assert.Contains(t, out, "most nodes updating at once: 1, maxUnavailable 1")
	dir := p.workDir(t)
	assert.NoDirExists(t, dir)
	assert.Empty(t, processesUsing(t, dir), "every process of the demo has stopped")
}

func TestDemoKeepRunsUntilInterrupted(t *testing.T) {
	p := startDemo(t, "--keep")
	p.waitOutput(t, "Everything keeps running until Ctrl-C", 6*time.Minute)
	dir := p.workDir(t)
	assert.Len(t, processesUsing(t, dir), 4+replicas, "etcd, kube-apiserver, the driver, the manager and the pool's node agents run")

	// The kubeconfig the demo prints reaches the cluster, in the demo's
	// namespace, where the rollout left three machines.
	m := regexp.MustCompile(`export KUBECONFIG=(\S+)`).FindStringSubmatch(p.out.String())
	require.NotNil(t, m)
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: m[1]}, &clientcmd.ConfigOverrides{})
	ns, _, err := loader.Namespace()
	require.NoError(t, err)
	assert.Equal(t, namespace, ns)
	cfg, err := loader.ClientConfig()
	require.NoError(t, err)
	scheme, err := demoScheme()
	require.NoError(t, err)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	require.NoError(t, err)
	var machines v1alpha1.MachineList
	require.NoError(t, c.List(context.Background(), &machines, client.InNamespace(ns)))
	assert.Len(t, machines.Items, 3)

	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, exitOK, p.wait(t, 2*time.Minute), "Ctrl-C is how --keep ends")
	assert.NoDirExists(t, dir)
	assert.Empty(t, processesUsing(t, dir))
}

func TestDemoKilledTakesItsProcessesAlong(t *testing.T) {
	p := startDemo(t, "--keep")
	p.waitOutput(t, "Starting machina-manager", 4*time.Minute)
	dir := p.workDir(t)
	require.Eventually(t, func() bool { return len(processesUsing(t, dir)) == 4 }, time.Minute, 100*time.Millisecond,
		"etcd, kube-apiserver, the driver and the manager run")

	// SIGKILL: the demo runs no cleanup at all.
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGKILL))
	p.wait(t, time.Minute)
	assert.Eventually(t, func() bool { return len(processesUsing(t, dir)) == 0 }, 30*time.Second, 100*time.Millisecond,
		"the kernel stops every process of a killed demo: %v", processesUsing(t, dir))

	// What is left is its directory, which the next demo removes.
	require.DirExists(t, dir)
	removeStaleWorkDirs(filepath.Dir(dir))
	assert.NoDirExists(t, dir)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
