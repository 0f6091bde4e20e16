package mcpool_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/mcdrain"
	"github.com/machina-io/machina/core/internal/controller/mcpool"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/testenv"
)

// Handshake keys, spelled out as an agent written against the wire
// protocol would.
const (
	keyCurrent     = "machineconfiguration.openshift.io/currentConfig"
	keyDesired     = "machineconfiguration.openshift.io/desiredConfig"
	keyState       = "machineconfiguration.openshift.io/state"
	keyReason      = "machineconfiguration.openshift.io/reason"
	keyDrain       = "machineconfiguration.openshift.io/desiredDrain"
	keyLastApplied = "machineconfiguration.openshift.io/lastAppliedDrain"
)

const waitFor = time.Minute

// startControllers runs the pool and drain controllers (the drain
// controller answers the agents these tests play), and any others extra
// sets up, on env (one cluster for the pools, Nodes and machines)
// until the returned stop is called or the test ends.
func startControllers(t *testing.T, env *testenv.Env, extra ...func(ctrl.Manager) error) (stop func()) {
	t.Helper()
	_, stop = controllertest.RunManager(t, env, func(mgr ctrl.Manager) error {
		if err := (&mcpool.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 2}); err != nil {
			return err
		}
		if err := (&mcdrain.Reconciler{}).SetupWithManager(mgr, setup.Env{Target: mgr, Workers: 2}); err != nil {
			return err
		}
		for _, setup := range extra {
			if err := setup(mgr); err != nil {
				return err
			}
		}
		return nil
	})
	return stop
}

// createNodes creates n Ready Nodes named <prefix>-0.. with labels, each on
// config (currentConfig = desiredConfig = config, state Done) unless config
// is "".
func createNodes(t *testing.T, c client.Client, prefix string, n int, labels map[string]string, config string) []string {
	t.Helper()
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s-%d", prefix, i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
		for k, v := range labels {
			node.Labels[k] = v
		}
		if config != "" {
			node.Annotations = map[string]string{keyCurrent: config, keyDesired: config, keyState: "Done"}
		}
		require.NoError(t, c.Create(t.Context(), node))
		setReady(t, c, name, corev1.ConditionTrue)
		names = append(names, name)
	}
	return names
}

func setReady(t *testing.T, c client.Client, name string, status corev1.ConditionStatus) {
	t.Helper()
	require.NoError(t, retry(func() error {
		node := &corev1.Node{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		now := metav1.Now()
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "Test",
			LastHeartbeatTime: now, LastTransitionTime: now}}
		return c.Status().Update(t.Context(), node)
	}))
}

// retry retries fn on conflicts for a while.
func retry(fn func() error) error {
	var err error
	for range 50 {
		if err = fn(); err == nil || !apierrors.IsConflict(err) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return err
}

// createRendered creates a rendered MachineConfig (an empty Ignition
// config: these tests are about the rollout, not the contents).
func createRendered(t *testing.T, c client.Client, name string) {
	t.Helper()
	mc := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name}}
	mc.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.5.0"}}`)
	require.NoError(t, c.Create(t.Context(), mc))
}

// createPool creates a pool choosing the Nodes labelled pool=<name>, with
// target as its configuration (the render controller's job, done by hand).
func createPool(t *testing.T, c client.Client, name, target string, maxUnavailable *intstr.IntOrString) *mcv1.MachineConfigPool {
	t.Helper()
	pool := &mcv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: name}}
	pool.Spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}}
	pool.Spec.MaxUnavailable = maxUnavailable
	pool.Spec.Configuration.Name = target
	require.NoError(t, c.Create(t.Context(), pool))
	return pool
}

// updatePool changes a pool's spec.
func updatePool(t *testing.T, c client.Client, name string, change func(*mcv1.MachineConfigPool)) {
	t.Helper()
	require.NoError(t, retry(func() error {
		pool := &mcv1.MachineConfigPool{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, pool); err != nil {
			return err
		}
		change(pool)
		return c.Update(t.Context(), pool)
	}))
}

// agentUpdate plays a node agent through one update of name to the
// desiredConfig it has: Working, a drain asked for and waited for (the
// node must then be cordoned), the files "written", the uncordon asked for
// and waited for, Done with currentConfig.
func agentUpdate(t *testing.T, c client.Client, name string) {
	t.Helper()
	desired := controllertest.GetNode(t, c, name).Annotations[keyDesired]
	require.NotEmpty(t, desired)
	controllertest.PatchNodeAnnotations(t, c, name, map[string]string{keyState: "Working", keyReason: ""})
	controllertest.PatchNodeAnnotations(t, c, name, map[string]string{keyDrain: "drain-" + desired})
	controllertest.WaitObject(t, c, client.ObjectKey{Name: name}, "drain acknowledged", func(n *corev1.Node) bool { return n.Annotations[keyLastApplied] == "drain-"+desired })
	require.True(t, controllertest.GetNode(t, c, name).Spec.Unschedulable, "a drained node is cordoned")
	controllertest.PatchNodeAnnotations(t, c, name, map[string]string{keyDrain: "uncordon-" + desired})
	controllertest.WaitObject(t, c, client.ObjectKey{Name: name}, "uncordon acknowledged", func(n *corev1.Node) bool { return n.Annotations[keyLastApplied] == "uncordon-"+desired })
	require.False(t, controllertest.GetNode(t, c, name).Spec.Unschedulable, "an uncordoned node is schedulable")
	controllertest.PatchNodeAnnotations(t, c, name, map[string]string{keyCurrent: desired, keyState: "Done", keyReason: ""})
}

func conditionIs(p *mcv1.MachineConfigPool, typ string, status metav1.ConditionStatus) bool {
	c := meta.FindStatusCondition(p.Status.Conditions, typ)
	return c != nil && c.Status == status && c.ObservedGeneration == p.Generation
}

func conditionOf(p *mcv1.MachineConfigPool, typ string) metav1.Condition {
	if c := meta.FindStatusCondition(p.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// inFlight returns the nodes given target that have not finished it.
func inFlight(t *testing.T, c client.Client, names []string, target string) []string {
	t.Helper()
	var out []string
	for _, name := range names {
		a := controllertest.GetNode(t, c, name).Annotations
		if a[keyDesired] == target && (a[keyCurrent] != target || a[keyState] != "Done") {
			out = append(out, name)
		}
	}
	return out
}

// countOn counts the nodes whose desiredConfig is target.
func countOn(t *testing.T, c client.Client, names []string, target string) int {
	t.Helper()
	n := 0
	for _, name := range names {
		if controllertest.GetNode(t, c, name).Annotations[keyDesired] == target {
			n++
		}
	}
	return n
}

// watchInFlight records, until the test ends, the largest number of nodes
// of names seen at once with target desired and not done; with target "",
// with any configuration desired and not done (degraded nodes included, as
// the e2e test's watchPoolInFlight counts them). It reads the API server
// every few milliseconds; the rounds of rollOut check the bound too, at
// the moments that matter.
type flightRecorder struct {
	mu  sync.Mutex
	max int
}

func (f *flightRecorder) peak() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.max
}

func watchInFlight(t *testing.T, c client.Client, names []string, target string) *flightRecorder {
	f := &flightRecorder{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			n := 0
			list := &corev1.NodeList{}
			if err := c.List(ctx, list); err == nil {
				set := map[string]bool{}
				for _, name := range names {
					set[name] = true
				}
				for _, node := range list.Items {
					a := node.Annotations
					d := a[keyDesired]
					if set[node.Name] && d != "" && (target == "" || d == target) && (a[keyCurrent] != d || a[keyState] != "Done") {
						n++
					}
				}
				f.mu.Lock()
				f.max = max(f.max, n)
				f.mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return f
}

// rollOut plays the agents of names until every node runs target: in each
// round it waits until want(remaining) nodes are in flight (the pool's
// budget filled), checks that no more are, and updates them. It returns the
// rounds' sizes.
func rollOut(t *testing.T, c client.Client, names []string, target string, budget int) []int {
	t.Helper()
	var rounds []int
	for {
		remaining := len(names) - countDone(t, c, names, target)
		if remaining == 0 {
			return rounds
		}
		want := min(budget, remaining)
		var flying []string
		err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, waitFor, true, func(context.Context) (bool, error) {
			flying = inFlight(t, c, names, target)
			return len(flying) >= want, nil
		})
		require.NoError(t, err, "waiting for %d nodes in flight to %s, have %v", want, target, flying)
		require.LessOrEqual(t, len(flying), budget, "more nodes in flight than maxUnavailable: %v", flying)
		rounds = append(rounds, len(flying))
		for _, name := range flying {
			agentUpdate(t, c, name)
		}
	}
}

func countDone(t *testing.T, c client.Client, names []string, target string) int {
	t.Helper()
	n := 0
	for _, name := range names {
		a := controllertest.GetNode(t, c, name).Annotations
		if a[keyDesired] == target && a[keyCurrent] == target && a[keyState] == "Done" {
			n++
		}
	}
	return n
}

func clientMergeFrom(obj client.Object) client.Patch { return client.MergeFrom(obj) }
