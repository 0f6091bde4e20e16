package manager

import (
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/inplace"
	"github.com/machina-io/machina/core/testenv"
)

// How an Auto in-place rollout paces and writes (issue 34): the slot of a
// machine updated and back in service is used while the rest of its wave
// still updates, and each node's marks are written in as few patches as
// their meaning allows.
func TestInPlaceRolloutPacing(t *testing.T) {
	logTo(t)
	env := testenv.Start(t)
	t.Run("a free slot is used while the wave still updates", func(t *testing.T) { testInPlaceFreeSlot(t, env) })
	t.Run("a node's marks come and go in one write each", func(t *testing.T) { testInPlaceNodeWrites(t, env) })
}

// Four machines, maxUnavailable 2: the first two nodes are selected; the
// first is updated, moved and Running again while the agent of the second
// does not answer. The first one's slot goes to a third node at once: a
// node being updated is out of the available machines already and must not
// also count as one about to be drained (which held every further
// selection back until the whole wave was done).
func testInPlaceFreeSlot(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 4, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(2))
	w.waitMachines(4, v1alpha1.MachineRunning)
	var names []string
	for _, n := range w.nodes() {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	// Auto selects in node-name order: the first two go first. The
	// second's agent stays silent until released.
	var mu sync.Mutex
	held := true
	w.setAnswer(func(node string) string {
		mu.Lock()
		defer mu.Unlock()
		if node == names[1] && held {
			return ""
		}
		return v1alpha1.LabelValueNodeUpdateSuccessful
	})

	w.changeTemplate(d, "class-v2")
	w.eventually(func() bool {
		var third bool
		for _, n := range w.nodes() {
			if (n.Name == names[2] || n.Name == names[3]) && inplace.IsSelected(&n) {
				third = true
			}
		}
		for _, m := range w.machineList() {
			if m.Labels[v1alpha1.NodeLabelKey] == names[1] && m.Status.CurrentStatus.Phase != v1alpha1.MachineInPlaceUpdating {
				return false
			}
		}
		return third
	}, waitFor, "a third node is selected while the second still updates")

	mu.Lock()
	held = false
	mu.Unlock()
	w.waitRolledOut(d, 2*waitFor)
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.LessOrEqual(t, w.maxUnavailable, 2, "more machines unavailable at once than maxUnavailable allows")
}

// nodeVersion is what a rollout writes on a node, as one watch event shows
// it.
type nodeVersion struct {
	tainted, candidate, selected, unschedulable bool
}

func versionOf(n *corev1.Node) nodeVersion {
	v := nodeVersion{candidate: inplace.IsCandidate(n), selected: inplace.IsSelected(n), unschedulable: n.Spec.Unschedulable}
	for _, t := range n.Spec.Taints {
		if t.Key == v1alpha1.PreferNoScheduleTaintKey {
			v.tainted = true
		}
	}
	return v
}

// Every version of every node during a rollout, from a watch: a node of an
// old set gets the rollout's taint and the candidate label in one write
// (two writes, the second starting from a cached node without the first,
// failed on the taints' resource version and cost the rollout's start a
// retry), and a moved machine's node is uncordoned in the same write that
// takes its marks off (one write instead of two, and its machine turns
// Running one sync sooner).
func testInPlaceNodeWrites(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 3, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(3, v1alpha1.MachineRunning)
	mine := map[string]bool{}
	for _, n := range w.nodes() {
		mine[n.Name] = true
	}

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	watcher, err := wc.Watch(w.ctx, &corev1.NodeList{})
	require.NoError(t, err)
	defer watcher.Stop()
	versions := map[string][]nodeVersion{}
	var vmu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range watcher.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok || ev.Type != watch.Modified || !mine[n.Name] {
				continue
			}
			vmu.Lock()
			versions[n.Name] = append(versions[n.Name], versionOf(n))
			vmu.Unlock()
		}
	}()

	w.changeTemplate(d, "class-v2")
	w.waitRolledOut(d, 2*waitFor)
	watcher.Stop()
	<-done

	vmu.Lock()
	defer vmu.Unlock()
	require.Len(t, versions, 3)
	for name, vs := range versions {
		cordoned := false
		for i, v := range vs {
			assert.False(t, v.tainted && !v.candidate, "node %s version %d: tainted for the rollout but not a candidate: %+v", name, i, vs)
			if v.unschedulable {
				cordoned = true
			}
			assert.False(t, cordoned && !v.unschedulable && (v.selected || v.candidate),
				"node %s version %d: uncordoned while still marked for the rollout: %+v", name, i, vs)
		}
		assert.True(t, cordoned, "node %s was drained for its update", name)
	}
}
