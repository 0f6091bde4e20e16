package machine

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/drivers/inmemory"
)

// kubelet plays the kubelets of the inmemory driver's VMs, which register
// no Nodes by themselves: for every VM of the world's namespace it
// registers a Node named as the driver said, reports it Ready, and removes
// the pods that are being deleted on it (their containers "stopped").
// A test can hold a node back (never registered) or change its conditions.
type kubelet struct {
	c   client.Client
	mem *inmemory.Driver
	ns  string

	mu         sync.Mutex
	hold       map[string]bool
	registered map[string]bool
	// vmMu is held by the driver while it deletes a VM, and by the kubelet
	// from its look at the VM to the Node's creation: a kubelet whose list
	// of VMs is a moment old would otherwise register a Node again after
	// the controller deleted the VM and then the Node.
	vmMu *sync.Mutex
}

func startKubelet(t *testing.T, ctx context.Context, c client.Client, mem *inmemory.Driver, vmMu *sync.Mutex, ns string) *kubelet {
	k := &kubelet{c: c, mem: mem, ns: ns, hold: map[string]bool{}, registered: map[string]bool{}, vmMu: vmMu}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				k.sync(ctx)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		// Node names are cluster-wide: leave none behind for the next test.
		k.mu.Lock()
		defer k.mu.Unlock()
		for name := range k.registered {
			_ = c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	return k
}

// holdNode keeps the node of a VM from registering (a VM that never boots).
func (k *kubelet) holdNode(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hold[name] = true
}

func (k *kubelet) held(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.hold[name]
}

func (k *kubelet) sync(ctx context.Context) {
	for _, vm := range k.mem.VMs() {
		if vm.Namespace != k.ns || k.held(vm.NodeName) {
			continue
		}
		node := &corev1.Node{}
		err := k.c.Get(ctx, client.ObjectKey{Name: vm.NodeName}, node)
		if apierrors.IsNotFound(err) {
			k.register(ctx, vm)
			continue
		}
		if err != nil {
			continue
		}
		if len(node.Status.Conditions) == 0 {
			// The first status report failed (e.g. a conflict with the
			// controller's label patch); a kubelet tries again.
			k.reportReady(ctx, node)
		}
		k.finalizePods(ctx, vm.NodeName)
	}
}

func (k *kubelet) register(ctx context.Context, vm inmemory.VM) {
	k.vmMu.Lock()
	defer k.vmMu.Unlock()
	if !slices.ContainsFunc(k.mem.VMs(), func(v inmemory.VM) bool { return v.ProviderID == vm.ProviderID }) {
		return
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   vm.NodeName,
			Labels: map[string]string{"kubernetes.io/hostname": vm.NodeName, v1alpha1.NodeMachineNameLabel: vm.Name},
		},
		Spec: corev1.NodeSpec{ProviderID: vm.ProviderID},
	}
	if err := k.c.Create(ctx, node); err != nil {
		return
	}
	k.mu.Lock()
	k.registered[vm.NodeName] = true
	k.mu.Unlock()
	k.reportReady(ctx, node)
}

// reportReady sets the conditions of a healthy node.
func (k *kubelet) reportReady(ctx context.Context, node *corev1.Node) {
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
	}
	_ = k.c.Status().Update(ctx, node)
}

// finalizePods removes the pods on the node that are being deleted.
func (k *kubelet) finalizePods(ctx context.Context, node string) {
	pods := &corev1.PodList{}
	if err := k.c.List(ctx, pods, client.MatchingFields{"spec.nodeName": node}); err != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil {
			_ = k.c.Delete(ctx, p, client.GracePeriodSeconds(0))
		}
	}
}

// setCondition sets a condition of a Node, as a kubelet or the
// node-problem-detector would.
func setNodeCondition(t *testing.T, ctx context.Context, c client.Client, name string, typ corev1.NodeConditionType, status corev1.ConditionStatus) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		node := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			t.Fatalf("reading node %s: %v", name, err)
		}
		now := metav1.Now()
		found := false
		for i := range node.Status.Conditions {
			cond := &node.Status.Conditions[i]
			if cond.Type == typ {
				if cond.Status != status {
					cond.LastTransitionTime = now
				}
				cond.Status, cond.LastHeartbeatTime, found = status, now, true
			}
		}
		if !found {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: typ, Status: status, LastHeartbeatTime: now, LastTransitionTime: now})
		}
		err := c.Status().Update(ctx, node)
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) || attempt > 10 {
			t.Fatalf("updating node %s: %v", name, err)
		}
	}
}

// runningPod creates a pod on node, Running and Ready as its kubelet would
// report (the Eviction API honours PodDisruptionBudgets only for such
// pods).
func runningPod(t *testing.T, ctx context.Context, c client.Client, ns, name, node string, labels map[string]string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "00000000-0000-0000-0000-000000000001", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := c.Status().Update(ctx, p); err != nil {
		t.Fatalf("setting status of pod %s: %v", name, err)
	}
}
