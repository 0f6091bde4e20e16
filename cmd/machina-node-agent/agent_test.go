package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// TestAgent runs the agent in the test process against a real API server:
// the protocol from the go signal to the report, failures, and the restart
// paths (an interrupted attempt found on disk, a target applied but not
// reported). TestAgentCrash kills a real agent process in the middle.
func TestAgent(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())

	t.Run("applies the target at the go signal and reports success", func(t *testing.T) {
		d := newDirs(t)
		d.writeSource(t, "web-v2", map[string]string{
			"etc/app/app.conf":  "level=2\n",
			"usr/local/bin/run": "#!/bin/sh\necho run\n",
		}, map[string]os.FileMode{"etc/app/app.conf": 0o640, "usr/local/bin/run": 0o755})
		require.NoError(t, os.Symlink("app.conf", filepath.Join(d.source, "web-v2", "etc/app/current.conf")))
		// A file of the root that the target does not have stays; one it
		// has is replaced.
		require.NoError(t, os.MkdirAll(filepath.Join(d.root, "etc/app"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d.root, "etc/app/app.conf"), []byte("level=1\n"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(d.root, "etc/keep"), []byte("mine\n"), 0o600))

		// Drained but not yet told to go.
		createNode(t, env, "node-success", v1alpha1.DrainSuccessful,
			map[string]string{v1alpha1.LabelKeyNodeSelectedForUpdate: "true"},
			map[string]string{annotationDesired: "web-v2", annotationCurrent: "web-v1",
				v1alpha1.AnnotationKeyMachineUpdateFailedReason: "left from an earlier failure"})
		startAgent(t, d.args(env.Kubeconfig, "node-success",
			`--apply-command=echo "$MACHINA_INPLACE_TARGET $MACHINA_NODE_NAME" > applied-by-command`))
		setReason(t, env, "node-success", v1alpha1.ReadyForUpdate)

		node := waitNode(t, env, "node-success", "successful", resultIs(v1alpha1.LabelValueNodeUpdateSuccessful, "web-v2"))
		assert.Equal(t, "true", node.Labels[v1alpha1.LabelKeyNodeSelectedForUpdate], "the agent leaves the core's labels alone")
		assert.Equal(t, "web-v2", node.Annotations[annotationDesired])

		assertFile(t, filepath.Join(d.root, "etc/app/app.conf"), "level=2\n", 0o640)
		assertFile(t, filepath.Join(d.root, "usr/local/bin/run"), "#!/bin/sh\necho run\n", 0o755)
		assertFile(t, filepath.Join(d.root, "etc/keep"), "mine\n", 0o600)
		assertFile(t, filepath.Join(d.root, "applied-by-command"), "web-v2 node-success\n", 0o644)
		link, err := os.Readlink(filepath.Join(d.root, "etc/app/current.conf"))
		require.NoError(t, err)
		assert.Equal(t, "app.conf", link)
		leftovers, err := filepath.Glob(filepath.Join(d.root, "etc/app/.*machina-tmp*"))
		require.NoError(t, err)
		assert.Empty(t, leftovers, "no temporary file is left")

		st := readState(t, d.state)
		assert.Equal(t, "web-v2", st.LastApplied)
		assert.Nil(t, st.Attempt, "the attempt marker is gone once the apply ended")
	})

	t.Run("a failing apply command is reported with its last line, and retried when asked", func(t *testing.T) {
		d := newDirs(t)
		d.writeSource(t, "web-v2", map[string]string{"etc/app.conf": "x\n"}, nil)
		work := t.TempDir()
		runs, fixed := filepath.Join(work, "runs"), filepath.Join(work, "fixed")
		createNode(t, env, "node-fail", v1alpha1.ReadyForUpdate, nil,
			map[string]string{annotationDesired: "web-v2", annotationCurrent: "web-v1"})
		startAgent(t, d.args(env.Kubeconfig, "node-fail",
			`--apply-command=echo run >> `+runs+`; [ -e `+fixed+` ] && exit 0; echo restarting; echo "kubelet config rejected" >&2; exit 3`))

		node := waitNode(t, env, "node-fail", "failed", resultIs(v1alpha1.LabelValueNodeUpdateFailed, ""))
		reason := node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason]
		assert.Equal(t, "apply command failed (exit status 3): kubelet config rejected", reason)
		assert.Equal(t, "web-v1", node.Annotations[annotationCurrent], "current stays what was applied before")
		st := readState(t, d.state)
		assert.Equal(t, "web-v2", st.Failed)
		assert.Equal(t, "web-v1", node.Annotations[annotationCurrent])
		assert.Nil(t, st.Attempt)

		// Removing the result label asks for another try, which succeeds
		// and removes the failure reason.
		require.NoError(t, os.WriteFile(fixed, nil, 0o644))
		patchNode(t, env, "node-fail", `{"metadata":{"labels":{"`+v1alpha1.LabelKeyNodeUpdateResult+`":null}}}`)
		waitNode(t, env, "node-fail", "successful", resultIs(v1alpha1.LabelValueNodeUpdateSuccessful, "web-v2"))
		// Two runs: the failed one and the retry (that a reconcile while
		// the Node shows failed applies nothing is checked step by step in
		// TestReconcileFailureIsNotRetried).
		data, err := os.ReadFile(runs)
		require.NoError(t, err)
		assert.Equal(t, "run\nrun\n", string(data))
		assert.Equal(t, state{LastApplied: "web-v2", LastAppliedAt: readState(t, d.state).LastAppliedAt}, readState(t, d.state))
	})

	t.Run("a target without a source is a failure that says so", func(t *testing.T) {
		d := newDirs(t)
		createNode(t, env, "node-nosource", v1alpha1.ReadyForUpdate, nil,
			map[string]string{annotationDesired: "web-v9"})
		startAgent(t, d.args(env.Kubeconfig, "node-nosource"))
		node := waitNode(t, env, "node-nosource", "failed", resultIs(v1alpha1.LabelValueNodeUpdateFailed, ""))
		assert.Equal(t, "no source for target web-v9: directory "+filepath.Join(d.source, "web-v9")+" does not exist",
			node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason])
		assert.NotContains(t, node.Annotations, annotationCurrent)
	})

	t.Run("a target that is not a directory name is refused", func(t *testing.T) {
		d := newDirs(t)
		createNode(t, env, "node-traversal", v1alpha1.ReadyForUpdate, nil,
			map[string]string{annotationDesired: "../state"})
		startAgent(t, d.args(env.Kubeconfig, "node-traversal"))
		node := waitNode(t, env, "node-traversal", "failed", resultIs(v1alpha1.LabelValueNodeUpdateFailed, ""))
		assert.Equal(t, `target "../state" contains a path separator`, node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason])
	})

	t.Run("desired equal to current is reported without applying", func(t *testing.T) {
		d := newDirs(t)
		d.writeSource(t, "web-v2", map[string]string{"etc/app.conf": "x\n"}, nil)
		createNode(t, env, "node-current", v1alpha1.ReadyForUpdate, nil,
			map[string]string{annotationDesired: "web-v2", annotationCurrent: "web-v2"})
		startAgent(t, d.args(env.Kubeconfig, "node-current", "--apply-command=touch applied"))
		waitNode(t, env, "node-current", "successful", resultIs(v1alpha1.LabelValueNodeUpdateSuccessful, "web-v2"))
		assertEmptyDir(t, d.root)
		assert.Equal(t, state{}, readState(t, d.state), "nothing was attempted")
	})

	t.Run("a target applied before a restart is reported without applying again", func(t *testing.T) {
		d := newDirs(t)
		d.writeSource(t, "web-v2", map[string]string{"etc/app.conf": "x\n"}, nil)
		// The previous run applied web-v2 in full and stopped before its
		// report reached the Node.
		applied := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		require.NoError(t, saveState(d.state, state{LastApplied: "web-v2", LastAppliedAt: applied}))
		createNode(t, env, "node-applied", v1alpha1.ReadyForUpdate, nil,
			map[string]string{annotationDesired: "web-v2", annotationCurrent: "web-v1"})
		startAgent(t, d.args(env.Kubeconfig, "node-applied", "--apply-command=touch applied"))
		waitNode(t, env, "node-applied", "successful", resultIs(v1alpha1.LabelValueNodeUpdateSuccessful, "web-v2"))
		assertEmptyDir(t, d.root)
		assert.Equal(t, state{LastApplied: "web-v2", LastAppliedAt: applied}, readState(t, d.state))
	})

	t.Run("an interrupted attempt found at start is resumed", func(t *testing.T) {
		d := newDirs(t)
		d.writeSource(t, "web-v2", map[string]string{"etc/app.conf": "x\n"}, nil)
		started := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
		require.NoError(t, saveState(d.state, state{LastApplied: "web-v1",
			Attempt: &attempt{Target: "web-v2", Number: 1, StartedAt: started}}))
		createNode(t, env, "node-resume", v1alpha1.ReadyForUpdate, nil,
			map[string]string{annotationDesired: "web-v2", annotationCurrent: "web-v1"})
		logs := startAgent(t, d.args(env.Kubeconfig, "node-resume", "--max-attempts=2"))
		waitNode(t, env, "node-resume", "successful", resultIs(v1alpha1.LabelValueNodeUpdateSuccessful, "web-v2"))
		assertFile(t, filepath.Join(d.root, "etc/app.conf"), "x\n", 0o644)
		st := readState(t, d.state)
		assert.Equal(t, "web-v2", st.LastApplied)
		assert.Nil(t, st.Attempt)
		assert.Contains(t, logs.String(), `"attempt":2`, "the resumed apply is the second attempt")
	})

	t.Run("after max-attempts interrupted attempts the target is reported failed", func(t *testing.T) {
		d := newDirs(t)
		d.writeSource(t, "web-v2", map[string]string{"etc/app.conf": "x\n"}, nil)
		started := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		require.NoError(t, saveState(d.state, state{Attempt: &attempt{Target: "web-v2", Number: 2, StartedAt: started}}))
		createNode(t, env, "node-giveup", v1alpha1.ReadyForUpdate, nil,
			map[string]string{annotationDesired: "web-v2"})
		startAgent(t, d.args(env.Kubeconfig, "node-giveup", "--max-attempts=2"))
		node := waitNode(t, env, "node-giveup", "failed", resultIs(v1alpha1.LabelValueNodeUpdateFailed, ""))
		assert.Equal(t, "gave up on target web-v2: 2 attempts were interrupted before they ended (the last started at 2026-01-02T03:04:05Z)",
			node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason])
		assertEmptyDir(t, d.root)
		st := readState(t, d.state)
		assert.Nil(t, st.Attempt)
		assert.Equal(t, "web-v2", st.Failed)
	})
}

func assertFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, content, string(data), path)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, mode, info.Mode().Perm(), "mode of %s", path)
}

func assertEmptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing was applied to %s", dir)
}

// patchNode merge-patches a Node, as a user or the core would.
func patchNode(t *testing.T, env *testenv.Env, name, patch string) {
	t.Helper()
	node := &corev1.Node{}
	node.Name = name
	require.NoError(t, env.Client.Patch(t.Context(), node, client.RawPatch(types.MergePatchType, []byte(patch))))
}
