package setup_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// noteLimit is the API server's limit on an events.k8s.io/v1 note, in bytes.
const noteLimit = 1024

// TestRecorder records through setup.Recorder against a real API server
// and reads the events back through the core/v1 Event API, as kubectl,
// "kubectl machina why" and the controllers' tests do.
func TestRecorder(t *testing.T) {
	env := testenv.Start(t)
	ns := controllertest.Namespace(t, env.Client, "events")
	c, err := cluster.New(env.Config, func(o *cluster.Options) { o.Scheme = env.Scheme })
	require.NoError(t, err)
	rec := setup.Recorder(c, "setup-test")

	newObj := func(name string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		require.NoError(t, env.Client.Create(t.Context(), cm))
		return cm
	}
	set, one, two := newObj("set"), newObj("one"), newObj("two")

	// events lists the core/v1 Events about set with reason.
	events := func(reason string) []corev1.Event {
		list := &corev1.EventList{}
		require.NoError(t, env.Client.List(t.Context(), list, client.InNamespace(ns)))
		var out []corev1.Event
		for _, e := range list.Items {
			if e.InvolvedObject.Name == set.Name && e.Reason == reason {
				out = append(out, e)
			}
		}
		return out
	}

	t.Run("an event reads as a core/v1 Event", func(t *testing.T) {
		rec.Eventf(set, nil, corev1.EventTypeWarning, "Refused", "Validate", "spec.%s is not valid", "x")
		require.Eventually(t, func() bool { return len(events("Refused")) == 1 }, controllertest.WaitFor, controllertest.Tick)
		e := events("Refused")[0]
		assert.Equal(t, "spec.x is not valid", e.Message)
		assert.Equal(t, corev1.EventTypeWarning, e.Type)
		assert.Equal(t, "ConfigMap", e.InvolvedObject.Kind)
		assert.Equal(t, "setup-test", e.ReportingController)
		assert.Equal(t, "Validate", e.Action)
	})

	t.Run("a long note is cut to fit, not refused", func(t *testing.T) {
		// The limit is the API server's: a longer note is refused.
		tooLong := &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "too-long"},
			EventTime:  metav1.NowMicro(), Type: corev1.EventTypeNormal, Reason: "Long", Action: "Write",
			ReportingController: "setup-test", ReportingInstance: "setup-test-1",
			Regarding: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: set.Name},
			Note:      strings.Repeat("x", noteLimit+1),
		}
		require.Error(t, env.Client.Create(t.Context(), tooLong))

		rec.Eventf(set, nil, corev1.EventTypeNormal, "Long", "Write", "%s", strings.Repeat("é", noteLimit))
		require.Eventually(t, func() bool { return len(events("Long")) == 1 }, controllertest.WaitFor, controllertest.Tick)
		msg := events("Long")[0].Message
		assert.LessOrEqual(t, len(msg), noteLimit)
		assert.True(t, utf8.ValidString(msg), "cut at a character boundary")
		assert.True(t, strings.HasSuffix(msg, "(truncated)"), msg)
	})

	t.Run("a related object keeps each child's event", func(t *testing.T) {
		rec.Eventf(set, one, corev1.EventTypeNormal, "Created", "Create", "Created %s", one.Name)
		rec.Eventf(set, two, corev1.EventTypeNormal, "Created", "Create", "Created %s", two.Name)
		require.Eventually(t, func() bool { return len(events("Created")) == 2 }, controllertest.WaitFor, controllertest.Tick)
		var notes []string
		for _, e := range events("Created") {
			notes = append(notes, e.Message)
			require.NotNil(t, e.Related)
		}
		assert.ElementsMatch(t, []string{"Created one", "Created two"}, notes)
	})

	t.Run("repeats fold into a series that keeps the first note", func(t *testing.T) {
		rec.Eventf(set, nil, corev1.EventTypeNormal, "Scaled", "Scale", "Scaled to %d", 1)
		require.Eventually(t, func() bool { return len(events("Scaled")) == 1 }, controllertest.WaitFor, controllertest.Tick)
		rec.Eventf(set, nil, corev1.EventTypeNormal, "Scaled", "Scale", "Scaled to %d", 2)
		require.Eventually(t, func() bool {
			e := events("Scaled")
			return len(e) == 1 && e[0].Series != nil && e[0].Series.Count == 2
		}, controllertest.WaitFor, controllertest.Tick)
		assert.Equal(t, "Scaled to 1", events("Scaled")[0].Message)
	})
}
