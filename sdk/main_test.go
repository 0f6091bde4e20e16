package sdk

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mainHelperEnv makes the test binary run Main as a driver process instead
// of the tests, so that Main's flags, signals and exit codes are tested in
// a real process.
const mainHelperEnv = "MACHINA_SDK_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(mainHelperEnv) == "1" {
		Main(testInfo, newTestDriver(), WithLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// driverProcess is the test binary running Main.
type driverProcess struct {
	cmd    *exec.Cmd
	stderr *logBuffer
	exited chan struct{}
	err    error
}

func startDriverProcess(t *testing.T, env []string, args ...string) *driverProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), mainHelperEnv+"=1"), env...)
	p := &driverProcess{cmd: cmd, stderr: &logBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// exitCode waits for the process to exit and returns its exit code.
func (p *driverProcess) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("driver process did not exit; stderr:\n%s", p.stderr)
	}
	var exitErr *exec.ExitError
	if errors.As(p.err, &exitErr) {
		return exitErr.ExitCode()
	}
	require.NoError(t, p.err)
	return 0
}

func waitServing(t *testing.T, endpoint string, p *driverProcess) {
	t.Helper()
	client := driverv1alpha1.NewIdentityServiceClient(dial(t, endpoint))
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		info, err := client.GetPluginInfo(ctx, &driverv1alpha1.GetPluginInfoRequest{})
		return err == nil && info.GetName() == testInfo.Name
	}, 30*time.Second, 20*time.Millisecond, "driver process did not serve; stderr:\n%s", p.stderr)
}

func TestMainServesOnEnvEndpointAndStopsOnSIGTERM(t *testing.T) {
	path := socketPath(t)
	endpoint := "unix://" + path
	p := startDriverProcess(t, []string{EndpointEnv + "=" + endpoint})
	waitServing(t, endpoint, p)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, p.exitCode(t), "stderr:\n%s", p.stderr)
	_, err := os.Lstat(path)
	assert.True(t, os.IsNotExist(err), "the socket file is removed on exit")
	assert.Contains(t, p.stderr.String(), "stopped")
}

func TestMainFlagWinsOverEnv(t *testing.T) {
	path := socketPath(t)
	endpoint := "unix://" + path
	p := startDriverProcess(t, []string{EndpointEnv + "=unix://not/absolute"}, "--endpoint="+endpoint)
	waitServing(t, endpoint, p)

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
	assert.Equal(t, 0, p.exitCode(t), "stderr:\n%s", p.stderr)
}

func TestMainExitsOneOnError(t *testing.T) {
	p := startDriverProcess(t, nil, "--endpoint=unix://relative.sock")
	assert.Equal(t, 1, p.exitCode(t))
	stderr := p.stderr.String()
	assert.Contains(t, stderr, "test.driver.machina.io: ")
	assert.Contains(t, stderr, "must be absolute")
	assert.False(t, bytes.Contains([]byte(stderr), []byte("serving the Driver API")))
}
