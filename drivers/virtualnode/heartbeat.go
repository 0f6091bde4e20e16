package virtualnode

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

const (
	// leaseNamespace holds the Leases kubelets renew for their Nodes.
	leaseNamespace = corev1.NamespaceNodeLease
	// leaseDurationSeconds is what a kubelet puts on its Lease.
	leaseDurationSeconds = 40
)

// nodeRef names one Node in one cluster.
type nodeRef struct {
	cluster *cluster
	name    string
}

// heartbeat is the simulated kubelet of every Node of the driver: one
// goroutine that refreshes all Nodes every interval, a Node at once when
// asked to (after its creation, or when its AnnotationSimulate changed), and
// the Nodes whose boot ends when it ends.
type heartbeat struct {
	interval time.Duration
	watch    bool
	log      *slog.Logger

	mu       sync.Mutex
	ctx      context.Context // of run, nil before
	clusters []*cluster
	watched  map[string]cache.Store // by cluster key, once its informer synced
	pending  map[nodeRef]bool
	nextBoot time.Time // earliest end of a boot still to come
	wake     chan struct{}
}

func newHeartbeat(interval time.Duration, watch bool, log *slog.Logger) *heartbeat {
	return &heartbeat{
		interval: interval,
		watch:    watch,
		log:      log,
		watched:  map[string]cache.Store{},
		pending:  map[nodeRef]bool{},
		wake:     make(chan struct{}, 1),
	}
}

// addCluster adds a cluster whose Nodes get heartbeats.
func (h *heartbeat) addCluster(cl *cluster) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clusters = append(h.clusters, cl)
	if h.ctx != nil {
		h.startWatchLocked(cl)
	}
}

// trigger asks for a heartbeat of one Node as soon as possible.
func (h *heartbeat) trigger(cl *cluster, name string) {
	h.mu.Lock()
	h.pending[nodeRef{cl, name}] = true
	h.mu.Unlock()
	select {
	case h.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

func (h *heartbeat) run(ctx context.Context) {
	h.mu.Lock()
	h.ctx = ctx
	for _, cl := range h.clusters {
		h.startWatchLocked(cl)
	}
	h.mu.Unlock()

	ticker := time.NewTicker(h.interval)
	defer ticker.Stop()
	boot := time.NewTimer(time.Hour)
	defer boot.Stop()
	h.beatAll(ctx)
	for {
		h.mu.Lock()
		next := h.nextBoot
		h.mu.Unlock()
		boot.Stop()
		if !next.IsZero() {
			boot.Reset(max(time.Until(next), 0))
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			h.beatAll(ctx)
		case <-boot.C:
			h.beatAll(ctx)
		case <-h.wake:
			h.beatPending(ctx)
		}
	}
}

// beatAll refreshes every Node of every cluster.
func (h *heartbeat) beatAll(ctx context.Context) {
	h.mu.Lock()
	h.nextBoot = time.Time{}
	clusters := slices.Clone(h.clusters)
	h.mu.Unlock()
	for _, cl := range clusters {
		nodes, err := h.nodes(ctx, cl)
		if err != nil {
			h.log.Warn("listing virtual nodes failed", "error", err)
			continue
		}
		for _, n := range nodes {
			h.beat(ctx, cl, n)
		}
	}
}

// nodes returns the Nodes of the driver in a cluster, from the informer's
// cache when there is one.
func (h *heartbeat) nodes(ctx context.Context, cl *cluster) ([]*corev1.Node, error) {
	h.mu.Lock()
	store := h.watched[cl.key]
	h.mu.Unlock()
	if store != nil {
		var out []*corev1.Node
		for _, obj := range store.List() {
			out = append(out, obj.(*corev1.Node))
		}
		return out, nil
	}
	list, err := cl.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelClass})
	if err != nil {
		return nil, err
	}
	out := make([]*corev1.Node, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// beatPending refreshes the Nodes that asked for it.
func (h *heartbeat) beatPending(ctx context.Context) {
	h.mu.Lock()
	refs := slices.Collect(maps.Keys(h.pending))
	clear(h.pending)
	h.mu.Unlock()
	for _, ref := range refs {
		node, err := ref.cluster.client.CoreV1().Nodes().Get(ctx, ref.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			h.log.Warn("reading a virtual node failed", "node", ref.name, "error", err)
			continue
		}
		h.beat(ctx, ref.cluster, node)
	}
}

// beat refreshes one Node: its conditions and its Lease.
func (h *heartbeat) beat(ctx context.Context, cl *cluster, node *corev1.Node) {
	if node.DeletionTimestamp != nil || node.Annotations[AnnotationMachine] == "" {
		return // a deleted VM's kubelet is gone; a foreign Node is not ours
	}
	now := time.Now()
	if ready := readyAfter(node); ready.After(now) {
		h.mu.Lock()
		if h.nextBoot.IsZero() || ready.Before(h.nextBoot) {
			h.nextBoot = ready
		}
		h.mu.Unlock()
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": nextConditions(node, now)}})
	if err != nil {
		h.log.Error("encoding a node status patch failed", "node", node.Name, "error", err)
		return
	}
	_, err = cl.client.CoreV1().Nodes().PatchStatus(ctx, node.Name, patch)
	if err != nil && !apierrors.IsNotFound(err) {
		h.log.Warn("patching the conditions of a virtual node failed", "node", node.Name, "error", err)
		return
	}
	if slices.Contains(simulated(node), SimulateReadyUnknown) {
		return // a dead kubelet renews no Lease
	}
	if err := renewLease(ctx, cl, node, now); err != nil {
		h.log.Debug("renewing the lease of a virtual node failed", "node", node.Name, "error", err)
	}
}

// renewLease renews the Node's Lease in kube-node-lease, creating it when
// missing, with the Node as owner so that it goes with the Node.
func renewLease(ctx context.Context, cl *cluster, node *corev1.Node, now time.Time) error {
	leases := cl.client.CoordinationV1().Leases(leaseNamespace)
	renew := metav1.NewMicroTime(now)
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"renewTime": renew}})
	if err != nil {
		return err
	}
	_, err = leases.Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	_, err = leases.Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:      node.Name,
			Namespace: leaseNamespace,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID,
			}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(node.Name),
			LeaseDurationSeconds: ptr.To[int32](leaseDurationSeconds),
			RenewTime:            &renew,
		},
	}, metav1.CreateOptions{})
	return err
}

// startWatchLocked starts an informer on the driver's Nodes of a cluster
// when watching is on: it refreshes a Node at once when its
// AnnotationSimulate changes, and its cache replaces the LIST of beatAll.
// The caller holds h.mu and has set h.ctx.
func (h *heartbeat) startWatchLocked(cl *cluster) {
	if !h.watch {
		return
	}
	if _, started := h.watched[cl.key]; started {
		return
	}
	h.watched[cl.key] = nil // started, not synced yet
	factory := informers.NewSharedInformerFactoryWithOptions(cl.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = LabelClass }))
	informer := factory.Core().V1().Nodes().Informer()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(oldObj, newObj any) {
			oldNode, ok1 := oldObj.(*corev1.Node)
			newNode, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && oldNode.Annotations[AnnotationSimulate] != newNode.Annotations[AnnotationSimulate] {
				h.trigger(cl, newNode.Name)
			}
		},
	})
	if err != nil {
		h.log.Error("watching virtual nodes failed", "error", err)
		return
	}
	ctx := h.ctx
	factory.Start(ctx.Done())
	go func() {
		if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			return
		}
		h.mu.Lock()
		h.watched[cl.key] = informer.GetStore()
		h.mu.Unlock()
	}()
}
