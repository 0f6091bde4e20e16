package machine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// skewedClock is the system clock moved by offset: a controller whose clock
// disagrees with the API server's.
type skewedClock struct{ offset time.Duration }

func (c skewedClock) Now() time.Time                  { return time.Now().Add(c.offset) }
func (c skewedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// TestTimeoutsOnASkewedClock checks the timeout decisions with the
// controller's clock two hours ahead of, and behind, the API server's: the
// creation and drain timeouts run from the controller's first observation,
// so they fire after exactly the timeout on the controller's clock, whatever
// the API server wrote in creationTimestamp and deletionTimestamp.
func TestTimeoutsOnASkewedClock(t *testing.T) {
	server := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC) // the API server's "now"
	for _, skew := range []time.Duration{2 * time.Hour, -2 * time.Hour, 0} {
		t.Run("skew "+skew.String(), func(t *testing.T) {
			r := &Reconciler{Options: Options{CreationTimeout: 20 * time.Minute, DrainTimeout: time.Hour}.withDefaults()}
			m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", CreationTimestamp: metav1.NewTime(server)}}
			// Reconciles of the same machine, at manager times after the
			// first observation; each starts from what the last one stored.
			seen := server.Add(skew)
			at := func(after time.Duration) *scope {
				s := &scope{machine: m, original: m.DeepCopy(), now: seen.Add(after), log: logr.Discard()}
				observeTimeoutStarts(s)
				return s
			}

			s := at(0)
			require.NotNil(t, m.Status.CreationObservedTime)
			assert.Equal(t, seen, m.Status.CreationObservedTime.Time, "the controller's own clock, not creationTimestamp")
			assert.False(t, r.creationTimedOut(s), "not fired at once by a clock ahead")
			assert.False(t, r.creationTimedOut(at(20*time.Minute-time.Second)))
			assert.True(t, r.creationTimedOut(at(20*time.Minute)), "not held off by a clock behind")

			// Joined, later deleted: the drain timeout runs from the
			// controller's first sight of the deletion.
			m.Status.CurrentStatus.Phase = v1alpha1.MachineRunning
			deleted := metav1.NewTime(server.Add(3 * time.Hour))
			m.DeletionTimestamp = &deleted
			seen = deleted.Add(skew)
			s = at(0)
			require.NotNil(t, m.Status.DeletionObservedTime)
			assert.Equal(t, seen, v1alpha1.DrainClockStart(m))
			ready := &corev1.Node{
				ObjectMeta: metav1.ObjectMeta{Name: "m", CreationTimestamp: metav1.NewTime(server)},
				Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
					Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(server),
				}}},
			}
			assert.Empty(t, r.forceDrainReason(s, ready), "a graceful drain")
			assert.Empty(t, r.forceDrainReason(at(time.Hour-time.Second), ready))
			assert.Contains(t, r.forceDrainReason(at(time.Hour), ready), "drain timeout of 1h0m0s has passed since the deletion was seen")
		})
	}
}

// TestMachineTimeoutsOnKubeAPIServer runs the timeout scenarios against a
// real API server of their own: testInvalidDuration relaxes the CRD's rules
// for a moment.
func TestMachineTimeoutsOnKubeAPIServer(t *testing.T) {
	env := testenv.Start(t)
	t.Run("creation timeout, clock ahead", func(t *testing.T) { testCreationTimeoutSkewed(t, env, time.Hour) })
	t.Run("creation timeout, clock behind", func(t *testing.T) { testCreationTimeoutSkewed(t, env, -time.Hour) })
	t.Run("stored invalid duration", func(t *testing.T) { testInvalidDuration(t, env) })
}

// testCreationTimeoutSkewed runs the controller on a clock skewed against
// the API server's, for a machine whose node never joins: the machine is
// Pending first and Failed once the creation timeout has passed on the
// controller's clock. Measured from creationTimestamp, a clock an hour ahead
// fails it at once and a clock an hour behind not for an hour.
func testCreationTimeoutSkewed(t *testing.T, env *testenv.Env, skew time.Duration) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.opts.Clock = skewedClock{skew}
	w.class("small", nil)
	w.kubelet.holdNode("m1")
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineCreationTimeout: v1alpha1.NewDuration(3 * time.Second)}
	})
	m := w.waitPhase("m1", v1alpha1.MachineFailed, waitLong)
	assert.Contains(t, m.Status.LastOperation.Description, "did not join the cluster within the creation timeout of 3s")
	w.rec.assertPhases(t, "m1", []string{"", "Pending", "Failed"})
	require.NotNil(t, m.Status.CreationObservedTime)
	// Both times are the controller's, with second precision.
	assert.GreaterOrEqual(t, m.Status.CurrentStatus.LastUpdateTime.Sub(m.Status.CreationObservedTime.Time), 2*time.Second,
		"not Failed before the timeout on the controller's clock")
	assert.InDelta(t, skew.Seconds(), m.Status.CreationObservedTime.Sub(m.CreationTimestamp.Time).Seconds(), 30,
		"observed on the controller's clock")
}

// testInvalidDuration stores a machine whose drainTimeout Go cannot parse,
// as one written before the schema refused it, next to a good one: the good
// machine is created and runs, the bad one alone is refused with a Warning
// event and the DurationsValid condition naming the field, and goes on once
// the field is fixed.
func testInvalidDuration(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "Machine",
		"metadata":   map[string]any{"name": "bad", "namespace": w.ns},
		"spec": map[string]any{
			"class":        map[string]any{"kind": "MachineClass", "name": "small"},
			"drainTimeout": "9999999999h",
		},
	}}
	env.CreateBypassingRules(t, bad, "machines."+v1alpha1.GroupVersion.Group, "spec", "drainTimeout")
	w.start()
	w.machine("good", "small")
	w.waitPhase("good", v1alpha1.MachineRunning, waitLong)

	m := w.eventually("bad", waitLong, "the DurationsValid condition", func(m *v1alpha1.Machine) bool {
		return meta.FindStatusCondition(m.Status.MachineConditions, conditionDurationsValid) != nil
	})
	c := meta.FindStatusCondition(m.Status.MachineConditions, conditionDurationsValid)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, reasonInvalidDuration, c.Reason)
	assert.Contains(t, c.Message, `spec.drainTimeout: "9999999999h" is not a duration Go can parse`)
	note := w.waitEvent("bad", corev1.EventTypeWarning, reasonInvalidDuration)
	assert.Contains(t, note, "spec.drainTimeout")
	assert.Empty(t, m.Finalizers, "nothing is done with the machine")
	assert.Empty(t, m.Status.CurrentStatus.Phase)
	assert.Len(t, w.mem.VMs(), 1, "only the good machine has a VM")
	raw := &unstructured.Unstructured{}
	raw.SetGroupVersionKind(v1alpha1.GroupVersion.WithKind("Machine"))
	require.NoError(t, env.Client.Get(w.ctx, client.ObjectKeyFromObject(bad), raw))
	got, _, _ := unstructured.NestedString(raw.Object, "spec", "drainTimeout")
	assert.Equal(t, "9999999999h", got, "the value is kept as written")

	// A new value Go can parse: the machine goes on, the condition goes.
	fix, err := json.Marshal(map[string]any{"spec": map[string]any{"drainTimeout": "1h"}})
	require.NoError(t, err)
	require.NoError(t, env.Client.Patch(w.ctx, &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "bad"}},
		client.RawPatch("application/merge-patch+json", fix)))
	m = w.waitPhase("bad", v1alpha1.MachineRunning, waitLong)
	assert.Nil(t, meta.FindStatusCondition(m.Status.MachineConditions, conditionDurationsValid))
}
