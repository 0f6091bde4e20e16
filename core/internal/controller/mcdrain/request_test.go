package mcdrain_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mcdrain"
	"github.com/machina-io/machina/core/testenv"
)

// TestDrainOnlyWhatARolloutAsked: the drain controller drains a Node only
// for the configuration the Node was given (its desiredConfig), never for
// a request on a Node no pool updates or for another configuration; such
// a request stays unanswered and an event on the Node says why.
func TestDrainOnlyWhatARolloutAsked(t *testing.T) {
	env := testenv.Start(t)
	c := env.Client
	startController(t, env)
	names := createNodes(t, c, "ask", 3, nil)
	outside, other, asked := names[0], names[1], names[2]
	controllertest.PatchNodeAnnotations(t, c, other, map[string]string{keyDesired: "rendered-a-2", keyCurrent: "rendered-a-1"})
	controllertest.PatchNodeAnnotations(t, c, asked, map[string]string{keyDesired: "rendered-a-2", keyCurrent: "rendered-a-1"})

	// A Node no pool gave a configuration.
	controllertest.PatchNodeAnnotations(t, c, outside, map[string]string{keyDrain: "drain-rendered-a-2"})
	controllertest.RequireEvent(t, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: outside}}, mcdrain.ReasonBadDrainAction,
		"is not acted on: the node has no machineconfiguration.openshift.io/desiredConfig: no pool is updating it")
	// A request for a configuration the Node was not given.
	controllertest.PatchNodeAnnotations(t, c, other, map[string]string{keyDrain: "drain-rendered-evil"})
	controllertest.RequireEvent(t, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: other}}, mcdrain.ReasonBadDrainAction,
		`it names "rendered-evil", but the node's machineconfiguration.openshift.io/desiredConfig is "rendered-a-2"`)

	// The one a rollout asked for is drained. The events above come from
	// the reconciles that would have drained the others, so they are done.
	controllertest.PatchNodeAnnotations(t, c, asked, map[string]string{keyDrain: "drain-rendered-a-2"})
	controllertest.WaitObject(t, c, client.ObjectKey{Name: asked}, "drain acknowledged", func(n *corev1.Node) bool {
		return n.Annotations[keyLastApplied] == "drain-rendered-a-2" && n.Spec.Unschedulable
	})
	for _, name := range []string{outside, other} {
		n := controllertest.GetNode(t, c, name)
		assert.False(t, n.Spec.Unschedulable, "%s is not cordoned", name)
		assert.Empty(t, n.Annotations[keyLastApplied], "%s: nothing acknowledged", name)
	}

	// Asking again for the configuration it was given is answered.
	controllertest.PatchNodeAnnotations(t, c, other, map[string]string{keyDrain: "uncordon-rendered-a-2"})
	controllertest.WaitObject(t, c, client.ObjectKey{Name: other}, "uncordon acknowledged", func(n *corev1.Node) bool {
		return n.Annotations[keyLastApplied] == "uncordon-rendered-a-2"
	})
}
