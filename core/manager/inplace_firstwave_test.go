package manager

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/inplace"
	"github.com/machina-io/machina/core/testenv"
)

// testInPlaceFirstWaveFirst: the first wave is selected before the other
// nodes are made candidates, so that its go signal does not wait for a
// write to every node of the deployment. The order is read from a watch of
// the nodes, which sees the API server's writes as they happened: with
// maxUnavailable 1 one node is marked, selected, and only then the others
// are marked. Then the rollout completes as any other.
func testInPlaceFirstWaveFirst(t *testing.T, env *testenv.Env) {
	const replicas = 5
	w := newIPWorld(t, env)
	d := w.deployment("web", replicas, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(replicas, v1alpha1.MachineRunning)
	names := map[string]bool{}
	for _, n := range w.nodes() {
		names[n.Name] = true
	}
	require.Len(t, names, replicas)

	wc, err := client.NewWithWatch(env.Config, client.Options{})
	require.NoError(t, err)
	list := &corev1.NodeList{}
	require.NoError(t, wc.List(w.ctx, list))
	watcher, err := wc.Watch(w.ctx, &corev1.NodeList{}, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
	require.NoError(t, err)
	defer watcher.Stop()

	w.changeTemplate(d, "class-v2")
	var order []string // "candidate <node>" or "selected <node>", as first seen
	seen := map[string]bool{}
	deadline := time.After(waitFor)
	for len(seen) < replicas+1 {
		select {
		case ev, ok := <-watcher.ResultChan():
			require.True(t, ok, "the watch ended; seen: %v", order)
			n, isNode := ev.Object.(*corev1.Node)
			if ev.Type != watch.Modified || !isNode || !names[n.Name] {
				continue
			}
			if inplace.IsCandidate(n) && !seen["candidate "+n.Name] {
				seen["candidate "+n.Name] = true
				order = append(order, "candidate "+n.Name)
			}
			if inplace.IsSelected(n) && !seen["selected"] {
				seen["selected"] = true
				order = append(order, "selected "+n.Name)
			}
		case <-deadline:
			require.FailNow(t, "not every node became a candidate, or none was selected", "seen: %v\n%s", order, w.describe())
		}
	}
	first := -1
	for i, o := range order {
		if strings.HasPrefix(o, "selected") {
			first = i
			break
		}
	}
	assert.Positive(t, first, "a node is a candidate before it is selected: %v", order)
	assert.GreaterOrEqual(t, len(order)-1-first, 1, "some nodes became candidates only after the first selection: %v", order)
	w.waitRolledOut(d, 2*waitFor)
}
