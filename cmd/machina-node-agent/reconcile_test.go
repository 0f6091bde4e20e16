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
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// TestReconcileFailureIsNotRetried calls the agent's Reconcile directly,
// against a real API server, one step at a time: a failed target is
// reported once, and the reconciles that follow while the Node still gives
// the go signal (its own update-result=failed is such a change) do not
// apply it again; removing the label does.
func TestReconcileFailureIsNotRetried(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	ctx := t.Context()
	d := newDirs(t)
	d.writeSource(t, "web-v2", map[string]string{"etc/app.conf": "x\n"}, nil)
	runs := filepath.Join(t.TempDir(), "runs")
	createNode(t, env, "node-once", v1alpha1.ReadyForUpdate, nil,
		map[string]string{annotationDesired: "web-v2", annotationCurrent: "web-v1"})
	a := &agent{
		client: env.Client, nodeName: "node-once", stateDir: d.state, maxAttempts: 3, now: time.Now,
		applier: &applier{root: d.root, sourceDir: d.source, timeout: time.Minute,
			command: "echo run >> " + runs + "; echo broken; exit 1"},
	}
	req := ctrl.Request{NamespacedName: types.NamespacedName{Name: "node-once"}}
	countRuns := func() int {
		data, err := os.ReadFile(runs)
		require.NoError(t, err)
		return len(data) / len("run\n")
	}

	_, err := a.Reconcile(ctx, req)
	require.NoError(t, err)
	node := &corev1.Node{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "node-once"}, node))
	assert.Equal(t, v1alpha1.LabelValueNodeUpdateFailed, node.Labels[v1alpha1.LabelKeyNodeUpdateResult])
	assert.Equal(t, "apply command failed (exit status 1): broken", node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason])
	assert.Equal(t, 1, countRuns())

	for range 2 {
		_, err = a.Reconcile(ctx, req)
		require.NoError(t, err)
	}
	assert.Equal(t, 1, countRuns(), "a reported failure is not applied again")

	patchNode(t, env, "node-once", `{"metadata":{"labels":{"`+v1alpha1.LabelKeyNodeUpdateResult+`":null}}}`)
	_, err = a.Reconcile(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, 2, countRuns(), "removing update-result asks for another try")
}

// TestReportIsGuardedByTheTarget reports a result for a target the Node no
// longer asks for: the API server refuses the patch (its test operation),
// and the Node keeps no result.
func TestReportIsGuardedByTheTarget(t *testing.T) {
	env := testenv.Start(t, testenv.WithoutCRDs())
	ctx := t.Context()
	createNode(t, env, "node-moved", v1alpha1.ReadyForUpdate, nil,
		map[string]string{annotationDesired: "web-v2", annotationCurrent: "web-v1"})
	a := &agent{client: env.Client, nodeName: "node-moved", now: time.Now}
	stale := &corev1.Node{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "node-moved"}, stale))
	// The core moves the node on to web-v3 after the agent read it.
	patchNode(t, env, "node-moved", `{"metadata":{"annotations":{"`+annotationDesired+`":"web-v3"}}}`)

	require.Error(t, a.reportSuccess(ctx, stale, "web-v2", "applied"))
	require.Error(t, a.reportFailure(ctx, stale, "web-v2", "broken"))
	node := &corev1.Node{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "node-moved"}, node))
	assert.NotContains(t, node.Labels, v1alpha1.LabelKeyNodeUpdateResult)
	assert.Equal(t, "web-v1", node.Annotations[annotationCurrent])

	// The same report for the target the Node asks for goes through.
	require.NoError(t, a.reportSuccess(ctx, node, "web-v3", "applied"))
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "node-moved"}, node))
	assert.Equal(t, v1alpha1.LabelValueNodeUpdateSuccessful, node.Labels[v1alpha1.LabelKeyNodeUpdateResult])
	assert.Equal(t, "web-v3", node.Annotations[annotationCurrent])
}
