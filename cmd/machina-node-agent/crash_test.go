package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// TestAgentCrash kills a real agent process (SIGKILL) while its apply
// command runs, that is between the attempt marker and the report, and
// starts it again: the new process finds the marker, applies the target
// again as attempt 2 and reports success. The same crash with
// --max-attempts=1 is reported failed instead.
func TestAgentCrash(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "machina-node-agent")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	env := testenv.Start(t, testenv.WithoutCRDs())

	for _, tc := range []struct {
		name        string
		maxAttempts int
		result      string
	}{
		{"resumed", 3, v1alpha1.LabelValueNodeUpdateSuccessful},
		{"given-up", 1, v1alpha1.LabelValueNodeUpdateFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDirs(t)
			d.writeSource(t, "web-v2", map[string]string{"etc/app.conf": "v2\n"}, nil)
			work := t.TempDir()
			started, release, runs := filepath.Join(work, "started"), filepath.Join(work, "release"), filepath.Join(work, "runs")
			// The command records each run, says it started (with its
			// process group), and waits until the test releases it.
			command := `echo run >> ` + runs + `; echo $$ > ` + started + `.tmp; mv ` + started + `.tmp ` + started +
				`; while [ ! -e ` + release + ` ]; do sleep 0.05; done`
			node := "node-crash-" + tc.name
			createNode(t, env, node, v1alpha1.ReadyForUpdate, nil,
				map[string]string{annotationDesired: "web-v2", annotationCurrent: "web-v1"})
			args := d.args(env.Kubeconfig, node, "--apply-command="+command, "--max-attempts="+strconv.Itoa(tc.maxAttempts))

			first := startAgentProcess(t, bin, filepath.Join(work, "first.log"), args)
			waitFile(t, started)
			st := readState(t, d.state)
			require.NotNil(t, st.Attempt, "the marker is written before the apply")
			assert.Equal(t, "web-v2", st.Attempt.Target)
			assert.Equal(t, 1, st.Attempt.Number)
			assertFile(t, filepath.Join(d.root, "etc/app.conf"), "v2\n", 0o644) // the files are copied before the command

			require.NoError(t, first.Process.Kill())
			_ = first.Wait()
			// The command's shell survives its agent: end it, as a reboot
			// or a container restart would.
			data, err := os.ReadFile(started)
			require.NoError(t, err)
			pgid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			require.NoError(t, err)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			require.NoError(t, os.Remove(started))
			n := &corev1.Node{}
			require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: node}, n))
			assert.NotContains(t, n.Labels, v1alpha1.LabelKeyNodeUpdateResult, "the killed agent reported nothing")

			require.NoError(t, os.WriteFile(release, nil, 0o644))
			second := startAgentProcess(t, bin, filepath.Join(work, "second.log"), args)
			n = waitNode(t, env, node, tc.result, resultIs(tc.result, "web-v2"))
			st = readState(t, d.state)
			assert.Nil(t, st.Attempt)
			runsData, err := os.ReadFile(runs)
			require.NoError(t, err)
			if tc.result == v1alpha1.LabelValueNodeUpdateSuccessful {
				assert.Equal(t, "web-v2", st.LastApplied)
				assert.Equal(t, "run\nrun\n", string(runsData), "applied again after the crash")
			} else {
				assert.Equal(t, "web-v2", st.Failed)
				assert.Equal(t, "run\n", string(runsData), "not applied again")
				assert.Contains(t, n.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason],
					"gave up on target web-v2: 1 attempts were interrupted")
			}

			// SIGTERM stops it gracefully.
			require.NoError(t, second.Process.Signal(syscall.SIGTERM))
			assert.NoError(t, second.Wait(), "exit code after SIGTERM")
		})
	}
}

// startAgentProcess starts the agent binary with its output in logPath; it
// is killed when the test ends, if still running, and its log printed when
// the test failed.
func startAgentProcess(t *testing.T, bin, logPath string, args []string) *exec.Cmd {
	t.Helper()
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		_ = logFile.Close()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("---- %s ----\n%s", logPath, data)
		}
	})
	return cmd
}
