package nodeinmemory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/machina-io/machina/internal/process"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// minNodeMajor is the oldest Node.js the driver runs on (package.json's
// engines).
const minNodeMajor = 20

// npmCI installs the packages of package-lock.json into node_modules/,
// exactly as locked, without running their install scripts.
var npmCI = []string{"ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"}

// installStamp, in node_modules/, holds the SHA-256 of the package-lock.json
// that the tests' npm ci installed.
const installStamp = ".machina-npm-ci"

var (
	setupOnce sync.Once
	nodePath  string
	setupErr  error
)

// node returns the node binary that runs the driver, with the driver's
// node_modules/ installed from package-lock.json, and fails the test when it
// cannot: without node, the driver cannot be tested, and that is a failure,
// not a skip.
func node(t testing.TB) string {
	t.Helper()
	setupOnce.Do(func() { nodePath, setupErr = setUpNode(driverDir(t)) })
	if setupErr != nil {
		t.Fatalf("the Node.js driver cannot run: %v", setupErr)
	}
	return nodePath
}

// setUpNode finds node (MACHINA_NODE, else node on PATH), checks its
// version and runs npm ci in dir unless node_modules/ holds what the
// current package-lock.json locks.
func setUpNode(dir string) (string, error) {
	bin := os.Getenv("MACHINA_NODE")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("node"); err != nil {
			return "", fmt.Errorf("node (v%d or later) is not on PATH: install Node.js and npm (Debian: apt-get install -y nodejs npm), or set MACHINA_NODE to a node binary", minNodeMajor)
		}
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %v", bin, err)
	}
	version := strings.TrimSpace(string(out))
	m := regexp.MustCompile(`^v(\d+)\.`).FindStringSubmatch(version)
	if m == nil {
		return "", fmt.Errorf("%s --version printed %q, not a Node.js version", bin, version)
	}
	if major, _ := strconv.Atoi(m[1]); major < minNodeMajor {
		return "", fmt.Errorf("%s is Node.js %s; the driver needs v%d or later", bin, version, minNodeMajor)
	}
	return bin, installModules(dir, bin)
}

// installModules runs npm ci in dir unless node_modules/ was installed from
// the current package-lock.json. A file lock keeps concurrent test
// processes (go test of several packages, two runs at once) from installing
// over each other.
func installModules(dir, nodeBin string) error {
	lockfile, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(lockfile)
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(dir, "node_modules", installStamp)

	dirSum := sha256.Sum256([]byte(dir))
	lockPath := filepath.Join(os.TempDir(), "machina-node-inmemory-"+hex.EncodeToString(dirSum[:8])+".lock")
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lockPath, err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	if got, err := os.ReadFile(stamp); err == nil && strings.TrimSpace(string(got)) == want {
		return nil
	}
	// npm is installed next to node; PATH is the fallback.
	npm := filepath.Join(filepath.Dir(nodeBin), "npm")
	if _, err := os.Stat(npm); err != nil {
		if npm, err = exec.LookPath("npm"); err != nil {
			return fmt.Errorf("npm is not next to %s nor on PATH: install npm (Debian: apt-get install -y npm) to install the driver's packages", nodeBin)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, npmCI...)
	cmd.Dir = dir
	// npm runs node through its #! line: put the node in use first on PATH.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(nodeBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm %s in %s: %v\n%s", strings.Join(npmCI, " "), dir, err, out)
	}
	return os.WriteFile(stamp, []byte(want+"\n"), 0o644)
}

// driverDir is this directory: main.js and lib/ live here.
func driverDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	return dir
}

// mainJS is the driver's entry point.
func mainJS(t testing.TB) string { return filepath.Join(driverDir(t), "main.js") }

// socketDir returns a new directory for a driver socket, short enough for
// the 107-byte limit of a socket path (t.TempDir() can be longer).
func socketDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "nod")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// driverProcess is the Node.js driver running as a child process.
type driverProcess struct {
	*process.Process
	Socket   string
	Endpoint string
	Logs     *process.Buffer
}

// startDriver starts the driver with its endpoint in MACHINA_DRIVER_ENDPOINT
// (the variable the core's pod sets), waits until it answers Probe, and
// stops it with SIGTERM when the test ends. The driver's log is printed when
// the test fails.
func startDriver(t testing.TB, args ...string) *driverProcess {
	t.Helper()
	p := launchDriver(t, filepath.Join(socketDir(t), "driver.sock"), args...)
	p.waitServing(t)
	return p
}

// launchDriver starts the driver on socket without waiting for it.
func launchDriver(t testing.TB, socket string, args ...string) *driverProcess {
	t.Helper()
	p := &driverProcess{Socket: socket, Endpoint: "unix://" + socket, Logs: &process.Buffer{}}
	var err error
	p.Process, err = process.Start(process.Config{
		Name:   "node driver",
		Path:   node(t),
		Args:   append([]string{mainJS(t)}, args...),
		Env:    append(os.Environ(), "MACHINA_DRIVER_ENDPOINT="+p.Endpoint),
		Output: p.Logs,
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("driver log:\n%s", p.Logs.String())
		}
	})
	return p
}

// waitServing waits until the driver answers Probe.
func (p *driverProcess) waitServing(t testing.TB) {
	t.Helper()
	conn := dial(t, p.Endpoint)
	identity := driverv1alpha1.NewIdentityServiceClient(conn)
	require.Eventually(t, func() bool {
		require.True(t, p.Running(), "the driver exited before serving:\n%s", p.Logs.String())
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := identity.Probe(ctx, &driverv1alpha1.ProbeRequest{})
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "the driver did not answer Probe on %s", p.Endpoint)
}

// wait waits for the driver to exit and returns its exit code.
func (p *driverProcess) wait(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(timeout):
		t.Fatalf("the driver did not exit within %v", timeout)
	}
	var exit *exec.ExitError
	if err := p.Err(); !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return p.ExitCode()
}

// dial connects to endpoint; the connection closes when the test ends.
func dial(t testing.TB, endpoint string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	return conn
}
