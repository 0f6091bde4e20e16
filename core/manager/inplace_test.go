package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/inplace"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// The InPlaceUpdate strategy end to end in one process: the whole manager
// (every controller) against a real API server, the inmemory driver on a
// real socket, a simulated kubelet that registers the VMs' Nodes, and a
// simulated node agent that answers the go signal by patching the Node's
// labels and annotations as an agent would.
func TestInPlaceRollout(t *testing.T) {
	logTo(t)
	env := testenv.Start(t)
	t.Run("Auto, maxUnavailable 1", func(t *testing.T) { testInPlaceAuto(t, env, intstr.FromInt32(1), 3, 1) })
	t.Run("Auto, maxUnavailable 50%", func(t *testing.T) { testInPlaceAuto(t, env, intstr.FromString("50%"), 4, 2) })
	t.Run("Manual", func(t *testing.T) { testInPlaceManual(t, env) })
	t.Run("a failed node is replaced at once", func(t *testing.T) { testInPlaceFailedReplaced(t, env) })
	t.Run("an agent that never answers times out", func(t *testing.T) { testInPlaceTimeout(t, env) })
	t.Run("pause and resume", func(t *testing.T) { testInPlacePause(t, env) })
	t.Run("second template change during a rollout", func(t *testing.T) { testInPlaceSecondChange(t, env) })
	t.Run("scale up and down during a rollout", func(t *testing.T) { testInPlaceScale(t, env) })
	t.Run("rollback", func(t *testing.T) { testInPlaceRollback(t, env) })
	t.Run("rollback while a node updates", func(t *testing.T) { testInPlaceRollbackMidUpdate(t, env) })
	t.Run("rollback after a node applied the abandoned template", func(t *testing.T) { testInPlaceRollbackAfterApply(t, env) })
	t.Run("manager restart in the middle", func(t *testing.T) { testInPlaceRestart(t, env) })
	t.Run("invalid strategy", func(t *testing.T) { testInPlaceInvalid(t, env) })
	t.Run("nodes held by a pre-update hook or a do-not-disrupt pod wait", func(t *testing.T) { testInPlaceDoNotDisrupt(t, env) })
	t.Run("the first wave is selected before the other candidates are marked", func(t *testing.T) { testInPlaceFirstWaveFirst(t, env) })
}

// TestInPlaceRolloutWithoutTargetCluster: no nodes, no rollout, a condition.
func TestInPlaceRolloutWithoutTargetCluster(t *testing.T) {
	logTo(t)
	env := testenv.Start(t)
	w := newIPWorld(t, env, func(o *Options) { o.TargetKubeconfig = NoTargetKubeconfig })
	d := w.deployment("web", 2, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(2, v1alpha1.MachineAvailable)
	vms := w.vmIDs()
	w.changeTemplate(d, "class-v2")
	var got *v1alpha1.MachineDeploymentCondition
	require.Eventually(t, func() bool {
		cur := w.getDeployment(d)
		got = mdCondition(cur, v1alpha1.MachineDeploymentProgressing)
		return cur.Status.ObservedGeneration == cur.Generation && got != nil && got.Reason == "InPlaceUpdateUnsupported"
	}, waitFor, tick)
	assert.Equal(t, v1alpha1.ConditionFalse, got.Status)
	assert.Contains(t, got.Message, "--target-kubeconfig=none")
	assert.Len(t, w.setList(), 1, "no new machine set is created")
	assert.Equal(t, vms, w.vmIDs())
}

// ipWorld is one subtest: a namespace, a driver, a kubelet, an agent and a
// manager (restartable).
type ipWorld struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	env    *testenv.Env
	ns     string
	mem    *inmemory.Driver
	opts   Options
	stop   func()

	mu sync.Mutex
	// answer decides what the agent does with a node told to update:
	// "successful", "failed" or "" (never answers).
	answer func(node string) string
	// paused holds the agent.
	paused bool
	// selectedEver records every node ever seen selected, and the most
	// nodes seen unavailable at once.
	selectedEver   map[string]bool
	maxUnavailable int
	applied        map[string]int
}

func newIPWorld(t *testing.T, env *testenv.Env, mutate ...func(*Options)) *ipWorld {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &ipWorld{t: t, ctx: ctx, cancel: cancel, env: env, ns: "ip-" + rand.String(6),
		answer:       func(string) string { return v1alpha1.LabelValueNodeUpdateSuccessful },
		selectedEver: map[string]bool{}, applied: map[string]int{}}
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.ns}}))

	dir, err := os.MkdirTemp("", "ip")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "d.sock")
	w.mem = inmemory.New(inmemory.Options{})
	srv, err := inmemory.NewServer(w.mem)
	require.NoError(t, err)
	srvCtx, srvCancel := context.WithCancel(ctx)
	srvDone := make(chan error, 1)
	go func() { srvDone <- srv.Serve(srvCtx, "unix://"+sock) }()
	t.Cleanup(func() {
		srvCancel()
		if err := <-srvDone; err != nil {
			t.Errorf("the driver's server: %v", err)
		}
	})

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "creds"}, StringData: map[string]string{"userData": "#cloud-config\n"}}
	require.NoError(t, env.Client.Create(ctx, secret))
	for _, name := range []string{"class-v1", "class-v2", "class-v3"} {
		c := &v1alpha1.MachineClass{
			ObjectMeta:   metav1.ObjectMeta{Namespace: w.ns, Name: name},
			ProviderSpec: runtime.RawExtension{Raw: []byte(`{"capacity":{"cpu":"2"}}`)},
			SecretRef:    &corev1.SecretReference{Name: "creds", Namespace: w.ns},
		}
		require.NoError(t, env.Client.Create(ctx, c))
	}

	w.opts = DefaultOptions()
	w.opts.ControlConfig = env.Config
	w.opts.Namespace = w.ns
	w.opts.DriverEndpoint = "unix://" + sock
	w.opts.LeaderElect = false
	w.opts.MetricsBindAddress = "0"
	w.opts.HealthProbeBindAddress = "0"
	w.opts.ConcurrentSyncs = 4
	w.opts.MachineDrainTimeout = 30 * time.Second
	w.opts.skipNameValidation = true
	w.opts.failOnUninformedReads = true
	for _, f := range mutate {
		f(&w.opts)
	}
	w.startManager()
	w.startKubeletAndAgent()
	return w
}

func (w *ipWorld) startManager() {
	w.t.Helper()
	m, err := New(w.opts)
	require.NoError(w.t, err)
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	w.stop = func() {
		once.Do(func() {
			cancel()
			require.NoError(w.t, <-done)
		})
	}
	w.t.Cleanup(func() {
		w.stop()
		requireInformedReads(w.t, m)
	})
}

// startKubeletAndAgent plays, every 50ms, the kubelet of every VM of the
// namespace (register the Node, report it Ready, remove pods being
// deleted) and the node agent of every Node (answer ReadyForUpdate when
// desired differs from current).
func (w *ipWorld) startKubeletAndAgent() {
	c := w.env.Client
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.ctx.Done():
				return
			case <-tick.C:
			}
			if w.opts.TargetKubeconfig == NoTargetKubeconfig {
				continue
			}
			for _, vm := range w.mem.VMs() {
				if vm.Namespace != w.ns {
					continue
				}
				node := &corev1.Node{}
				err := c.Get(w.ctx, client.ObjectKey{Name: vm.NodeName}, node)
				if apierrors.IsNotFound(err) {
					node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: vm.NodeName, Labels: map[string]string{"kubernetes.io/hostname": vm.NodeName}},
						Spec: corev1.NodeSpec{ProviderID: vm.ProviderID}}
					if c.Create(w.ctx, node) != nil {
						continue
					}
				} else if err != nil {
					continue
				}
				if len(node.Status.Conditions) == 0 {
					now := metav1.Now()
					node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}}
					_ = c.Status().Update(w.ctx, node)
					continue
				}
				w.observe()
				w.agent(node)
			}
		}
	}()
	w.t.Cleanup(func() {
		w.cancel()
		<-done
		for _, vm := range w.mem.VMs() {
			if vm.Namespace == w.ns {
				_ = c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: vm.NodeName}})
			}
		}
	})
}

// agent answers the go signal on one node as an agent would: apply when the
// reason is ReadyForUpdate and desired differs from current, then report.
func (w *ipWorld) agent(node *corev1.Node) {
	w.mu.Lock()
	paused, answer := w.paused, w.answer
	w.mu.Unlock()
	if paused || inplace.Reason(node) != v1alpha1.ReadyForUpdate || inplace.Result(node) != "" {
		return
	}
	desired := node.Annotations[v1alpha1.AnnotationKeyNodeDesired]
	if desired == "" || desired == node.Annotations[v1alpha1.AnnotationKeyNodeCurrent] {
		return
	}
	labels := map[string]any{}
	annotations := map[string]any{}
	switch answer(node.Name) {
	case v1alpha1.LabelValueNodeUpdateSuccessful:
		labels[v1alpha1.LabelKeyNodeUpdateResult] = v1alpha1.LabelValueNodeUpdateSuccessful
		annotations[v1alpha1.AnnotationKeyNodeCurrent] = desired
		annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason] = nil
		w.mu.Lock()
		w.applied[node.Name]++
		w.mu.Unlock()
	case v1alpha1.LabelValueNodeUpdateFailed:
		labels[v1alpha1.LabelKeyNodeUpdateResult] = v1alpha1.LabelValueNodeUpdateFailed
		annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason] = "simulated failure"
	default:
		return
	}
	raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}})
	err := w.env.Client.Patch(w.ctx, node, client.RawPatch("application/merge-patch+json", raw))
	w.t.Logf("agent: node %s told to apply %s answers %v (patch error: %v)", node.Name, desired, labels, err)
}

// observe records the nodes seen selected and the most machines of the
// namespace seen unavailable (in an in-place phase, or Running on a
// cordoned node) at once.
func (w *ipWorld) observe() {
	list := &v1alpha1.MachineList{}
	if w.env.Client.List(w.ctx, list, client.InNamespace(w.ns)) != nil {
		return
	}
	busy := 0
	for _, m := range list.Items {
		switch m.Status.CurrentStatus.Phase {
		case v1alpha1.MachineInPlaceUpdating, v1alpha1.MachineInPlaceUpdateSuccessful, v1alpha1.MachineInPlaceUpdateFailed:
			busy++
		}
	}
	nodes := &corev1.NodeList{}
	if w.env.Client.List(w.ctx, nodes) != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.maxUnavailable = max(w.maxUnavailable, busy)
	for i := range nodes.Items {
		if inplace.IsSelected(&nodes.Items[i]) {
			w.selectedEver[nodes.Items[i].Name] = true
		}
	}
}

func (w *ipWorld) setAnswer(f func(node string) string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answer = f
}

func (w *ipWorld) setAgentPaused(p bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paused = p
}

func (w *ipWorld) deployment(name string, replicas int32, orch v1alpha1.OrchestrationType, maxUnavailable intstr.IntOrString) *v1alpha1.MachineDeployment {
	w.t.Helper()
	zero := intstr.FromInt32(0)
	d := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": name}},
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type: v1alpha1.InPlaceUpdateMachineDeploymentStrategyType,
				InPlaceUpdate: &v1alpha1.InPlaceUpdateMachineDeployment{
					UpdateConfiguration: v1alpha1.UpdateConfiguration{MaxUnavailable: &maxUnavailable, MaxSurge: &zero},
					OrchestrationType:   orch,
				},
			},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": name}},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "class-v1"}},
			},
		},
	}
	require.NoError(w.t, w.env.Client.Create(w.ctx, d))
	return d
}

func (w *ipWorld) getDeployment(d *v1alpha1.MachineDeployment) *v1alpha1.MachineDeployment {
	w.t.Helper()
	cur := &v1alpha1.MachineDeployment{}
	require.NoError(w.t, w.env.Client.Get(w.ctx, client.ObjectKeyFromObject(d), cur))
	return cur
}

func (w *ipWorld) updateDeployment(d *v1alpha1.MachineDeployment, change func(*v1alpha1.MachineDeployment)) {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		cur := &v1alpha1.MachineDeployment{}
		if w.env.Client.Get(w.ctx, client.ObjectKeyFromObject(d), cur) != nil {
			return false
		}
		change(cur)
		return w.env.Client.Update(w.ctx, cur) == nil
	}, waitFor, tick)
}

func (w *ipWorld) changeTemplate(d *v1alpha1.MachineDeployment, class string) {
	w.updateDeployment(d, func(cur *v1alpha1.MachineDeployment) { cur.Spec.Template.Spec.Class.Name = class })
}

func (w *ipWorld) machineList() []v1alpha1.Machine {
	w.t.Helper()
	list := &v1alpha1.MachineList{}
	require.NoError(w.t, w.env.Client.List(w.ctx, list, client.InNamespace(w.ns)))
	return list.Items
}

func (w *ipWorld) setList() []v1alpha1.MachineSet {
	w.t.Helper()
	list := &v1alpha1.MachineSetList{}
	require.NoError(w.t, w.env.Client.List(w.ctx, list, client.InNamespace(w.ns)))
	return list.Items
}

// waitMachines waits for n machines, all in phase.
func (w *ipWorld) waitMachines(n int, phase v1alpha1.MachinePhase) {
	w.t.Helper()
	w.eventually(func() bool {
		ms := w.machineList()
		if len(ms) != n {
			return false
		}
		for _, m := range ms {
			if m.Status.CurrentStatus.Phase != phase {
				return false
			}
		}
		return true
	}, waitFor, "want %d machines %s", n, phase)
}

// vmIDs lists the provider IDs of the namespace's VMs.
func (w *ipWorld) vmIDs() []string {
	var ids []string
	for _, vm := range w.mem.VMs() {
		if vm.Namespace == w.ns {
			ids = append(ids, vm.ProviderID)
		}
	}
	sort.Strings(ids)
	return ids
}

// eventually waits for cond like require.Eventually and, on a timeout,
// fails with the world as it is then: require.Eventually's message
// arguments are evaluated before the wait, so they describe the start.
func (w *ipWorld) eventually(cond func() bool, timeout time.Duration, format string, args ...any) {
	w.t.Helper()
	if !assert.Eventually(w.t, cond, timeout, tick) {
		w.t.Fatalf("%s: %s", fmt.Sprintf(format, args...), w.describe())
	}
}

func (w *ipWorld) describe() string {
	var out []string
	for _, m := range w.machineList() {
		owner := ""
		if ref := metav1.GetControllerOf(&m); ref != nil {
			owner = ref.Name
		}
		out = append(out, fmt.Sprintf("%s(%s,%s,%s)", m.Name, owner, m.Status.CurrentStatus.Phase, m.Status.LastOperation.Description))
	}
	for _, ms := range w.setList() {
		out = append(out, fmt.Sprintf("set %s spec=%d status=%d labels=%v", ms.Name, ms.Spec.Replicas, ms.Status.Replicas, ms.Labels))
	}
	for _, n := range w.nodes() {
		out = append(out, fmt.Sprintf("node %s reason=%s candidate=%t selected=%t result=%q desired=%q current=%q unschedulable=%t", n.Name,
			inplace.Reason(&n), inplace.IsCandidate(&n), inplace.IsSelected(&n), inplace.Result(&n),
			n.Annotations[v1alpha1.AnnotationKeyNodeDesired], n.Annotations[v1alpha1.AnnotationKeyNodeCurrent], n.Spec.Unschedulable))
	}
	return strings.Join(out, "; ")
}

// waitRolledOut waits until the deployment's current template has all the
// machines, Running, in one set, with every node cleaned up, and no old
// set has replicas or the scale-up-disabled label.
func (w *ipWorld) waitRolledOut(d *v1alpha1.MachineDeployment, timeout time.Duration) *v1alpha1.MachineSet {
	w.t.Helper()
	var newSet *v1alpha1.MachineSet
	w.eventually(func() bool {
		cur := w.getDeployment(d)
		r := cur.Spec.Replicas
		st := cur.Status
		if st.ObservedGeneration != cur.Generation || st.UpdatedReplicas != r || st.AvailableReplicas != r || st.Replicas != r {
			return false
		}
		newSet = nil
		for _, ms := range w.setList() {
			if ms.Spec.Template.Spec.Class.Name == cur.Spec.Template.Spec.Class.Name {
				newSet = &ms
			} else if ms.Spec.Replicas != 0 {
				return false
			}
			if _, ok := ms.Labels[v1alpha1.LabelKeyMachineSetScaleUpDisabled]; ok {
				return false
			}
		}
		if newSet == nil {
			return false
		}
		ms := w.machineList()
		if len(ms) != int(r) {
			return false
		}
		for _, m := range ms {
			ref := metav1.GetControllerOf(&m)
			if ref == nil || ref.UID != newSet.UID || m.Status.CurrentStatus.Phase != v1alpha1.MachineRunning ||
				m.Labels[v1alpha1.LabelKeyNodeUpdateResult] != "" {
				return false
			}
			n := &corev1.Node{}
			if w.env.Client.Get(w.ctx, client.ObjectKey{Name: m.Labels[v1alpha1.NodeLabelKey]}, n) != nil ||
				inplace.HasRolloutMarks(n) || n.Spec.Unschedulable {
				return false
			}
		}
		return true
	}, timeout, "rollout of %s did not complete", d.Name)
	return newSet
}

func mdCondition(d *v1alpha1.MachineDeployment, t v1alpha1.MachineDeploymentConditionType) *v1alpha1.MachineDeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// testInPlaceAuto rolls replicas machines in place with maxUnavailable:
// no VM created or deleted, every node updated once, never more than
// wantMax machines unavailable at once, the same machines (names) after.
func testInPlaceAuto(t *testing.T, env *testenv.Env, maxUnavailable intstr.IntOrString, replicas int32, wantMax int) {
	w := newIPWorld(t, env)
	d := w.deployment("web", replicas, v1alpha1.OrchestrationTypeAuto, maxUnavailable)
	w.waitMachines(int(replicas), v1alpha1.MachineRunning)
	vms := w.vmIDs()
	var names []string
	for _, m := range w.machineList() {
		names = append(names, m.Name)
	}
	creates := w.mem.Calls("CreateMachine")

	w.changeTemplate(d, "class-v2")
	newSet := w.waitRolledOut(d, 2*waitFor)

	assert.Equal(t, vms, w.vmIDs(), "no VM created or deleted")
	assert.Equal(t, creates, w.mem.Calls("CreateMachine"), "no CreateMachine call")
	assert.Zero(t, w.mem.Calls("DeleteMachine"))
	var after []string
	for _, m := range w.machineList() {
		after = append(after, m.Name)
		assert.Equal(t, newSet.Spec.Selector.MatchLabels[v1alpha1.DefaultMachineDeploymentUniqueLabelKey],
			m.Labels[v1alpha1.DefaultMachineDeploymentUniqueLabelKey], "machine %s carries the new set's labels", m.Name)
	}
	assert.ElementsMatch(t, names, after, "the machines keep their names")
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Len(t, w.selectedEver, int(replicas), "every node was selected")
	for node, n := range w.applied {
		assert.Equal(t, 1, n, "node %s applied %d times", node, n)
	}
	assert.LessOrEqual(t, w.maxUnavailable, wantMax, "more machines unavailable at once than maxUnavailable allows")
	assert.Positive(t, w.maxUnavailable)
	for _, n := range w.nodes() {
		assert.Equal(t, newSet.Name, n.Annotations[v1alpha1.AnnotationKeyNodeCurrent])
		assert.Equal(t, v1alpha1.UpdateSuccessful, inplace.Reason(&n))
	}
	// The sets grow and shrink only by the moves, and each move's one
	// event says so: no ScalingMachineSet event of its own.
	assert.True(t, w.hasEvent("MovedUpdatedMachines", "to machine set "+newSet.Name+", now at", "replicas: "), "the moves' events name the sets' new sizes")
	// (A move whose scaling failed is made up for by the next sync's
	// sizing, whose event says so.)
	for _, msg := range w.eventMessages("ScalingMachineSet") {
		if strings.Contains(msg, newSet.Name) {
			assert.Contains(t, msg, "to match its machines", "a move's scaling wrote an event of its own")
		}
	}
	assert.False(t, w.hasEvent("InPlaceUpdateSelected"), "a node with nothing to drain got a selection event apart from its go signal's")
}

// setOf returns the namespace's machine set named name.
func (w *ipWorld) setOf(name string) *v1alpha1.MachineSet {
	w.t.Helper()
	ms := &v1alpha1.MachineSet{}
	require.NoError(w.t, w.env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, ms))
	return ms
}

// nodes returns the Nodes of the namespace's VMs.
func (w *ipWorld) nodes() []corev1.Node {
	var out []corev1.Node
	for _, vm := range w.mem.VMs() {
		if vm.Namespace != w.ns {
			continue
		}
		n := corev1.Node{}
		if w.env.Client.Get(w.ctx, client.ObjectKey{Name: vm.NodeName}, &n) == nil {
			out = append(out, n)
		}
	}
	return out
}

func setNodeLabel(t *testing.T, w *ipWorld, node, key, value string) {
	t.Helper()
	var v any = value
	if value == "" {
		v = nil
	}
	raw, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: v}}})
	require.NoError(t, w.env.Client.Patch(w.ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch("application/merge-patch+json", raw)))
}

// Manual: nothing is selected by the controller; the nodes the user
// selects are updated and moved, one after the other.
func testInPlaceManual(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 2, v1alpha1.OrchestrationTypeManual, intstr.FromInt32(1))
	w.waitMachines(2, v1alpha1.MachineRunning)
	vms := w.vmIDs()
	w.changeTemplate(d, "class-v2")

	// Every node becomes a candidate; none is selected by the controller.
	w.eventually(func() bool {
		for _, n := range w.nodes() {
			if !inplace.IsCandidate(&n) || inplace.Reason(&n) != v1alpha1.CandidateForUpdate {
				return false
			}
		}
		return len(w.nodes()) == 2
	}, waitFor, "the condition never held")
	for _, n := range w.nodes() {
		assert.False(t, inplace.IsSelected(&n), "Manual selects nothing by itself")
	}
	for _, n := range w.nodes() {
		setNodeLabel(t, w, n.Name, v1alpha1.LabelKeyNodeSelectedForUpdate, "true")
	}
	w.waitRolledOut(d, 2*waitFor)
	assert.Equal(t, vms, w.vmIDs(), "no VM created or deleted")
}

// A node whose agent fails: the machine is InPlaceUpdateFailed and, in
// Auto, is replaced by a fresh machine of the new template without waiting
// for the in-place timeout (its node is already drained); the rollout
// completes.
func testInPlaceFailedReplaced(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 3, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(3, v1alpha1.MachineRunning)
	var victim string
	for _, m := range w.machineList() {
		if victim == "" || m.Labels[v1alpha1.NodeLabelKey] < victim {
			victim = m.Labels[v1alpha1.NodeLabelKey]
		}
	}
	// The first node selected (by name) fails.
	w.setAnswer(func(node string) string {
		if node == victim {
			return v1alpha1.LabelValueNodeUpdateFailed
		}
		return v1alpha1.LabelValueNodeUpdateSuccessful
	})
	w.changeTemplate(d, "class-v2")

	// The failed machine is replaced on the deployment's next sync, so its
	// InPlaceUpdateFailed phase and the Progressing message naming it may
	// last less than a poll: the events are what stays. The machine says
	// why it failed, the deployment says it replaces it and why.
	w.eventually(func() bool {
		return w.hasEvent("InPlaceUpdateFailed", victim, "simulated failure") &&
			w.hasEvent("ReplacingFailedInPlaceUpdate", "machine "+victim, "simulated failure")
	}, waitFor, "no InPlaceUpdateFailed and ReplacingFailedInPlaceUpdate events for %s with the agent's reason", victim)

	w.waitRolledOut(d, 2*waitFor)
	var names []string
	for _, m := range w.machineList() {
		names = append(names, m.Name)
	}
	assert.NotContains(t, names, victim, "the failed machine was replaced")
	assert.Equal(t, 1, w.mem.Calls("DeleteMachine"), "one VM deleted: the failed machine's")
}

// hasEvent reports whether the namespace holds an event with reason whose
// message contains every one of parts.
func (w *ipWorld) hasEvent(reason string, parts ...string) bool {
	for _, msg := range w.eventMessages(reason) {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(msg, p)
		}
		if all {
			return true
		}
	}
	return false
}

// eventMessages returns the messages of the namespace's events of reason
// (none if they cannot be listed).
func (w *ipWorld) eventMessages(reason string) []string {
	events := &corev1.EventList{}
	if err := w.env.Client.List(w.ctx, events, client.InNamespace(w.ns)); err != nil {
		return nil
	}
	var out []string
	for _, e := range events.Items {
		if e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}

// An agent that never answers: InPlaceUpdateFailed after the timeout, with
// the reason; an answer after that still completes it.
func testInPlaceTimeout(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env, func(o *Options) { o.MachineInPlaceUpdateTimeout = 2 * time.Second })
	w.setAnswer(func(string) string { return "" })
	d := w.deployment("web", 1, v1alpha1.OrchestrationTypeManual, intstr.FromInt32(1))
	w.waitMachines(1, v1alpha1.MachineRunning)
	w.changeTemplate(d, "class-v2")
	node := w.machineList()[0].Labels[v1alpha1.NodeLabelKey]
	require.Eventually(t, func() bool { return len(w.nodes()) == 1 && inplace.IsCandidate(&w.nodes()[0]) }, waitFor, tick)
	setNodeLabel(t, w, node, v1alpha1.LabelKeyNodeSelectedForUpdate, "true")
	w.eventually(func() bool {
		m := w.machineList()[0]
		return m.Status.CurrentStatus.Phase == v1alpha1.MachineInPlaceUpdateFailed && strings.Contains(m.Status.LastOperation.Description, "timed out after 2s")
	}, waitFor, "the condition never held")
	// Manual: the failed machine is left for the user, and said so.
	require.Eventually(t, func() bool {
		c := mdCondition(w.getDeployment(d), v1alpha1.MachineDeploymentProgressing)
		return c != nil && strings.Contains(c.Message, "left for the user")
	}, waitFor, tick)
	w.setAnswer(func(string) string { return v1alpha1.LabelValueNodeUpdateSuccessful })
	w.waitRolledOut(d, waitFor)
}

// Pause stops selection; the node already under way finishes; resume
// completes the rollout.
func testInPlacePause(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 3, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(3, v1alpha1.MachineRunning)
	w.setAgentPaused(true)
	w.changeTemplate(d, "class-v2")
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.selectedEver) == 1
	}, waitFor, tick)
	w.updateDeployment(d, func(cur *v1alpha1.MachineDeployment) { cur.Spec.Paused = true })
	require.Eventually(t, func() bool {
		c := mdCondition(w.getDeployment(d), v1alpha1.MachineDeploymentProgressing)
		return c != nil && c.Reason == "DeploymentPaused"
	}, waitFor, tick)
	w.setAgentPaused(false)
	// The node under way finishes its update, but is not moved while paused,
	// and no other node is selected.
	w.eventually(func() bool {
		for _, m := range w.machineList() {
			if m.Status.CurrentStatus.Phase == v1alpha1.MachineInPlaceUpdateSuccessful {
				return true
			}
		}
		return false
	}, waitFor, "the condition never held")
	for _, m := range w.machineList() {
		if m.Status.CurrentStatus.Phase == v1alpha1.MachineInPlaceUpdateSuccessful {
			ref := metav1.GetControllerOf(&m)
			require.NotNil(t, ref)
			assert.Equal(t, "class-v1", w.setOf(ref.Name).Spec.Template.Spec.Class.Name, "a paused rollout moves no machine")
		}
	}
	selected := 0
	for _, n := range w.nodes() {
		if inplace.IsSelected(&n) {
			selected++
		}
	}
	assert.Equal(t, 1, selected)
	w.updateDeployment(d, func(cur *v1alpha1.MachineDeployment) { cur.Spec.Paused = false })
	w.waitRolledOut(d, 2*waitFor)
}

// A second template change in the middle: the rollout goes on to the
// newest template; every node ends up there.
func testInPlaceSecondChange(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 3, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(3, v1alpha1.MachineRunning)
	vms := w.vmIDs()
	w.changeTemplate(d, "class-v2")
	w.waitSetOfClass("class-v2")
	w.changeTemplate(d, "class-v3")
	newSet := w.waitRolledOut(d, 2*waitFor)
	assert.Equal(t, vms, w.vmIDs(), "no VM created or deleted")
	for _, n := range w.nodes() {
		assert.Equal(t, newSet.Name, n.Annotations[v1alpha1.AnnotationKeyNodeCurrent])
	}
}

// Scale up and down in the middle of a rollout: it completes with the new
// count; the scale-up creates machines of the new template only.
func testInPlaceScale(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 3, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(3, v1alpha1.MachineRunning)
	w.setAgentPaused(true)
	w.changeTemplate(d, "class-v2")
	require.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.selectedEver) == 1
	}, waitFor, tick)
	w.updateDeployment(d, func(cur *v1alpha1.MachineDeployment) { cur.Spec.Replicas = 5 })
	w.setAgentPaused(false)
	w.waitRolledOut(d, 2*waitFor)
	// The three machines are still the first VMs; the two added ones are of
	// the new template.
	var v1, v2 int
	for _, vm := range w.mem.VMs() {
		if vm.Namespace != w.ns {
			continue
		}
		switch vm.ClassName {
		case "class-v1":
			v1++
		case "class-v2":
			v2++
		}
	}
	assert.Equal(t, 3, v1, "the original VMs stay")
	assert.Equal(t, 2, v2, "the scale-up created machines of the new template")

	// A scale-down in the middle of the next rollout.
	w.setAgentPaused(true)
	w.changeTemplate(d, "class-v3")
	w.waitInPlaceUpdating()
	w.updateDeployment(d, func(cur *v1alpha1.MachineDeployment) { cur.Spec.Replicas = 2 })
	w.setAgentPaused(false)
	w.waitRolledOut(d, 2*waitFor)
}

// Rollback in the middle: the old template is current again; its set gets
// the machines back without VMs replaced, and no set keeps
// scale-up-disabled.
func testInPlaceRollback(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 3, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(3, v1alpha1.MachineRunning)
	vms := w.vmIDs()
	w.changeTemplate(d, "class-v2")
	w.waitSetOfClass("class-v2")
	w.rollBack(d)
	w.rolledBack(d, vms)
}

// rolledBack waits for the rollback to class-v1 to complete and checks that
// no VM was replaced and every node is on the set that is current again:
// its agent applied nothing, or last applied that set.
func (w *ipWorld) rolledBack(d *v1alpha1.MachineDeployment, vms []string) *v1alpha1.MachineSet {
	w.t.Helper()
	set := w.waitRolledOut(d, 2*waitFor)
	assert.Equal(w.t, "class-v1", w.getDeployment(d).Spec.Template.Spec.Class.Name)
	assert.Equal(w.t, vms, w.vmIDs(), "no VM created or deleted")
	for _, n := range w.nodes() {
		if applied, ok := n.Annotations[v1alpha1.AnnotationKeyNodeCurrent]; ok {
			assert.Equal(w.t, set.Name, applied, "node %s is on another target than its set", n.Name)
		}
	}
	return set
}

// waitInPlaceUpdating waits until a machine is InPlaceUpdating: its node
// has the go signal.
func (w *ipWorld) waitInPlaceUpdating() {
	w.t.Helper()
	w.eventually(func() bool {
		for _, m := range w.machineList() {
			if m.Status.CurrentStatus.Phase == v1alpha1.MachineInPlaceUpdating {
				return true
			}
		}
		return false
	}, waitFor, "the condition never held")
}

func (w *ipWorld) rollBack(d *v1alpha1.MachineDeployment) {
	w.updateDeployment(d, func(cur *v1alpha1.MachineDeployment) {
		cur.Spec.RollbackTo = &v1alpha1.RollbackConfig{Revision: 0}
	})
}

// A rollback while a node has the go signal for the abandoned template and
// its agent has not answered yet: the node is re-targeted to the set that
// is current again, and its agent applies that.
func testInPlaceRollbackMidUpdate(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 3, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(3, v1alpha1.MachineRunning)
	vms := w.vmIDs()
	w.setAgentPaused(true)
	w.changeTemplate(d, "class-v2")
	w.waitInPlaceUpdating()
	w.rollBack(d)
	require.Eventually(t, func() bool {
		cur := w.getDeployment(d)
		return cur.Status.ObservedGeneration == cur.Generation && cur.Spec.Template.Spec.Class.Name == "class-v1"
	}, waitFor, tick)
	w.setAgentPaused(false)
	w.rolledBack(d, vms)
}

// A rollback after a node's agent applied the abandoned template (the
// manager was down when it answered): the node is in the set that is
// current again, on the wrong target, and is updated back in place.
func testInPlaceRollbackAfterApply(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 3, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(3, v1alpha1.MachineRunning)
	vms := w.vmIDs()
	w.setAgentPaused(true)
	w.changeTemplate(d, "class-v2")
	w.waitInPlaceUpdating()
	w.stop()
	w.setAgentPaused(false)
	var updated string
	require.Eventually(t, func() bool {
		for _, n := range w.nodes() {
			if inplace.Result(&n) == v1alpha1.LabelValueNodeUpdateSuccessful {
				updated = n.Name
				return true
			}
		}
		return false
	}, waitFor, tick)
	w.rollBack(d)
	w.startManager()
	w.rolledBack(d, vms)
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.Equal(t, 2, w.applied[updated], "node %s applied the abandoned template, then the current one", updated)
}

// A manager stopped in the middle and a new one started: the rollout
// completes without a VM created or deleted.
func testInPlaceRestart(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 3, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(3, v1alpha1.MachineRunning)
	vms := w.vmIDs()
	w.setAgentPaused(true)
	w.changeTemplate(d, "class-v2")
	w.waitInPlaceUpdating()
	w.stop()
	w.setAgentPaused(false)
	// The agent answers while no manager runs.
	require.Eventually(t, func() bool {
		for _, n := range w.nodes() {
			if inplace.Result(&n) == v1alpha1.LabelValueNodeUpdateSuccessful {
				return true
			}
		}
		return false
	}, waitFor, tick)
	w.startManager()
	w.waitRolledOut(d, 2*waitFor)
	assert.Equal(t, vms, w.vmIDs(), "no VM created or deleted")
}

// A strategy without inPlaceUpdate, or with an unknown orchestrationType,
// is refused with InvalidStrategy.
func testInPlaceInvalid(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("web", 1, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.updateDeployment(d, func(cur *v1alpha1.MachineDeployment) { cur.Spec.Strategy.InPlaceUpdate = nil })
	require.Eventually(t, func() bool {
		cur := w.getDeployment(d)
		c := mdCondition(cur, v1alpha1.MachineDeploymentProgressing)
		return cur.Status.ObservedGeneration == cur.Generation && c != nil && c.Reason == "InvalidStrategy" &&
			strings.Contains(c.Message, "spec.strategy.inPlaceUpdate")
	}, waitFor, tick)
}

// waitSetOfClass waits until a MachineSet of the given class holds a
// machine: the rollout to that template is under way.
func (w *ipWorld) waitSetOfClass(class string) {
	w.t.Helper()
	w.eventually(func() bool {
		for _, ms := range w.setList() {
			if ms.Spec.Template.Spec.Class.Name == class && ms.Status.Replicas >= 1 {
				return true
			}
		}
		return false
	}, 2*waitFor, "no machine reached %s", class)
}

// testInPlaceDoNotDisrupt: a node running a pod that asks not to be
// disrupted, and a machine with an operator's pre-update hook, are not
// selected; their slots go to the third node, and the deployment says why.
// Once the hook is off and the pod gone the rollout finishes.
func testInPlaceDoNotDisrupt(t *testing.T, env *testenv.Env) {
	w := newIPWorld(t, env)
	d := w.deployment("dnd", 3, v1alpha1.OrchestrationTypeAuto, intstr.FromInt32(1))
	w.waitMachines(3, v1alpha1.MachineRunning)
	machines := w.machineList()
	require.Len(t, machines, 3)
	podNode, hooked := machines[0].Labels[v1alpha1.NodeLabelKey], &machines[1]
	hookedNode := hooked.Labels[v1alpha1.NodeLabelKey]
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "batch", Namespace: w.ns,
			Annotations: map[string]string{"machina.io/do-not-disrupt": "true"}},
		Spec: corev1.PodSpec{NodeName: podNode, Containers: []corev1.Container{{Name: "c", Image: "batch"}}},
	}
	require.NoError(t, env.Client.Create(w.ctx, pod))
	patch := client.MergeFrom(hooked.DeepCopy())
	hooked.Annotations = map[string]string{"pre-update.hook.machina.io/storage": ""}
	require.NoError(t, env.Client.Patch(w.ctx, hooked, patch))

	w.changeTemplate(d, "class-v2")
	wantPod := fmt.Sprintf("pod %s/batch on node %s has machina.io/do-not-disrupt=true", w.ns, podNode)
	wantHook := fmt.Sprintf("machine %s waits for its pre-update hook(s) [pre-update.hook.machina.io/storage]", hooked.Name)
	w.eventually(func() bool {
		c := mdCondition(w.getDeployment(d), v1alpha1.MachineDeploymentProgressing)
		w.mu.Lock()
		defer w.mu.Unlock()
		return c != nil && strings.Contains(c.Message, wantPod) && strings.Contains(c.Message, wantHook) && len(w.selectedEver) == 1
	}, waitFor, "the deployment did not say that %s and %s wait while the third node updates", podNode, hookedNode)
	w.mu.Lock()
	assert.False(t, w.selectedEver[podNode], "node %s was selected while its pod asks not to be disrupted", podNode)
	assert.False(t, w.selectedEver[hookedNode], "node %s was selected while its machine has a pre-update hook", hookedNode)
	w.mu.Unlock()

	// The operator takes its hook off, and the pod goes: the rollout looks
	// again within disruption.Recheck and finishes.
	require.NoError(t, env.Client.Get(w.ctx, client.ObjectKeyFromObject(hooked), hooked))
	patch = client.MergeFrom(hooked.DeepCopy())
	delete(hooked.Annotations, "pre-update.hook.machina.io/storage")
	require.NoError(t, env.Client.Patch(w.ctx, hooked, patch))
	require.NoError(t, env.Client.Delete(w.ctx, pod))
	w.waitRolledOut(d, 2*waitFor)
	w.mu.Lock()
	defer w.mu.Unlock()
	assert.True(t, w.selectedEver[podNode] && w.selectedEver[hookedNode], "both held nodes were updated once free")
}
