package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/internal/process"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = time.Minute

// dirs are one agent's directories.
type dirs struct {
	root, source, state string
}

func newDirs(t *testing.T) dirs {
	t.Helper()
	base := t.TempDir()
	d := dirs{root: filepath.Join(base, "root"), source: filepath.Join(base, "source"), state: filepath.Join(base, "state")}
	for _, dir := range []string{d.root, d.source, d.state} {
		require.NoError(t, os.Mkdir(dir, 0o755))
	}
	return d
}

// args are the agent's flags for node with these directories.
func (d dirs) args(kubeconfig, node string, extra ...string) []string {
	return append([]string{
		"--kubeconfig=" + kubeconfig, "--node-name=" + node,
		"--root=" + d.root, "--source-dir=" + d.source, "--state-dir=" + d.state,
		"--zap-log-level=debug",
	}, extra...)
}

// writeSource writes files (path → content) into the source of target,
// with mode 0644 unless the path is in modes.
func (d dirs) writeSource(t *testing.T, target string, files map[string]string, modes map[string]os.FileMode) {
	t.Helper()
	for rel, content := range files {
		path := filepath.Join(d.source, target, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		mode, ok := modes[rel]
		if !ok {
			mode = 0o644
		}
		require.NoError(t, os.WriteFile(path, []byte(content), mode))
		require.NoError(t, os.Chmod(path, mode))
	}
}

// startAgent runs the agent in the test process (run, as main does) until
// the test ends, and checks that it stops cleanly with exit code 0.
func startAgent(t *testing.T, args []string) *process.Buffer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs := &process.Buffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, logs, logs) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("the agent exited with %d; its log:\n%s", code, logs)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("the agent did not stop within 30s of its context's end")
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", logs)
		}
	})
	return logs
}

// createNode creates a Node with annotations and labels, and gives it the
// InPlaceUpdate condition with reason (none when reason is "").
func createNode(t *testing.T, env *testenv.Env, name, reason string, labels, annotations map[string]string) {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations}}
	require.NoError(t, env.Client.Create(t.Context(), node))
	if reason != "" {
		setReason(t, env, name, reason)
	}
}

// setReason sets the Node's InPlaceUpdate condition (status True) to reason,
// as the core's Machine controller does.
func setReason(t *testing.T, env *testenv.Env, name, reason string) {
	t.Helper()
	node := &corev1.Node{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: name}, node))
	now := metav1.Now()
	cond := corev1.NodeCondition{Type: v1alpha1.NodeInPlaceUpdate, Status: corev1.ConditionTrue, Reason: reason,
		Message: "set by the test", LastHeartbeatTime: now, LastTransitionTime: now}
	replaced := false
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == cond.Type {
			node.Status.Conditions[i], replaced = cond, true
		}
	}
	if !replaced {
		node.Status.Conditions = append(node.Status.Conditions, cond)
	}
	require.NoError(t, env.Client.Status().Update(t.Context(), node))
}

// waitNode waits until check accepts the Node; check returns "" when it
// does, else what is still missing.
func waitNode(t *testing.T, env *testenv.Env, name string, what string, check func(*corev1.Node) string) *corev1.Node {
	t.Helper()
	var node *corev1.Node
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		n := &corev1.Node{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, n); err != nil {
			last = err.Error()
			return false, nil
		}
		node = n
		last = check(n)
		return last == "", nil
	})
	require.NoError(t, err, "node %s: %s: not reached within %s; last: %s", name, what, waitTimeout, last)
	return node
}

// resultIs checks the agent's report on a Node: the update-result label, and
// for success current=target without a failure reason.
func resultIs(result, target string) func(*corev1.Node) string {
	return func(n *corev1.Node) string {
		got := n.Labels[v1alpha1.LabelKeyNodeUpdateResult]
		switch {
		case got != result:
			return fmt.Sprintf("update-result %q, annotations %v", got, n.Annotations)
		case result == v1alpha1.LabelValueNodeUpdateSuccessful && n.Annotations[annotationCurrent] != target:
			return fmt.Sprintf("current %q", n.Annotations[annotationCurrent])
		case result == v1alpha1.LabelValueNodeUpdateSuccessful && n.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason] != "":
			return "a failure reason is left: " + n.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason]
		case result == v1alpha1.LabelValueNodeUpdateFailed && n.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason] == "":
			return "no failure reason"
		}
		return ""
	}
}

// readState reads an agent's state file.
func readState(t *testing.T, dir string) state {
	t.Helper()
	st, err := loadState(dir)
	require.NoError(t, err)
	return st
}

// waitFile waits until path exists.
func waitFile(t *testing.T, path string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		_, err := os.Stat(path)
		return err == nil, nil
	})
	require.NoError(t, err, "%s did not appear within %s", path, waitTimeout)
}
