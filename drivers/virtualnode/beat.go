package virtualnode

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// beat is one heartbeat of one Node's kubelet: it renews the Lease and
// refreshes the conditions. It returns when the Node is due again, or keep
// false when the Node is gone and drops out of the schedule.
func (k *kubelets) beat(ctx context.Context, key nodeKey) (next time.Duration, keep bool) {
	cl, node, err := k.node(ctx, key)
	switch {
	case ctx.Err() != nil:
		return 0, false // shutting down
	case apierrors.IsNotFound(err):
		k.forget(key)
		return 0, false
	case err != nil:
		k.log.Warn("reading a virtual node failed", "node", key.name, "error", err)
		return min(retryAfter, k.interval), true
	case node.DeletionTimestamp != nil || node.Annotations[AnnotationMachine] == "":
		// A deleted VM's kubelet is gone; a foreign Node is not ours.
		k.forget(key)
		return 0, false
	}

	// Without a watch, the beat is when the simulated agent looks at its
	// Node (with one, it sees every change at once).
	k.updates.observe(cl, node)
	k.configs.observe(cl, node)
	now := time.Now()
	// The Lease first: once a Node shows Ready, its Lease exists.
	if !slices.Contains(simulated(node), SimulateReadyUnknown) { // a dead kubelet renews no Lease
		if err := k.renewLease(ctx, cl, key, node, now); err != nil {
			k.log.Debug("renewing the lease of a virtual node failed", "node", node.Name, "error", err)
		}
	}
	if err := k.patchConditions(ctx, cl, node, now); err != nil {
		if ctx.Err() != nil {
			return 0, false // shutting down
		}
		if apierrors.IsNotFound(err) {
			k.forget(key)
			return 0, false
		}
		k.log.Warn("patching the conditions of a virtual node failed", "node", node.Name, "error", err)
		return min(retryAfter, k.interval), true
	}
	return k.nextBeat(node, now), true
}

// node reads a Node: from the informer's store when there is one and it
// holds the Node, else from the API server.
func (k *kubelets) node(ctx context.Context, key nodeKey) (*cluster, *corev1.Node, error) {
	k.mu.Lock()
	c := k.clusters[key.cluster]
	var store cache.Store
	if c != nil {
		store = c.cache
	}
	k.mu.Unlock()
	if c == nil { // never happens: a Node is scheduled through its cluster
		return nil, nil, apierrors.NewNotFound(corev1.Resource("nodes"), key.name)
	}
	if store != nil {
		if obj, exists, err := store.GetByKey(key.name); err == nil && exists {
			if node, ok := obj.(*corev1.Node); ok {
				return c.cl, node, nil
			}
		}
	}
	node, err := c.cl.client.CoreV1().Nodes().Get(ctx, key.name, metav1.GetOptions{})
	return c.cl, node, err
}

// patchConditions writes the Node's conditions through the status
// subresource when they change or the last heartbeat is half an interval
// old. A beat soon after the status was written (a Node just created with
// its conditions, a beat just done because its simulation changed) then
// renews only the Lease.
func (k *kubelets) patchConditions(ctx context.Context, cl *cluster, node *corev1.Node, now time.Time) error {
	conditions := nextConditions(node, now)
	if !conditionsChanged(node.Status.Conditions, conditions) && now.Sub(lastHeartbeat(node)) < k.interval/2 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conditions}})
	if err != nil {
		return err
	}
	_, err = cl.client.CoreV1().Nodes().PatchStatus(ctx, node.Name, patch)
	return err
}

// conditionsChanged reports whether any of the wanted conditions differs
// from the Node's in anything but its times.
func conditionsChanged(have, want []corev1.NodeCondition) bool {
	for _, w := range want {
		i := slices.IndexFunc(have, func(h corev1.NodeCondition) bool { return h.Type == w.Type })
		if i < 0 || have[i].Status != w.Status || have[i].Reason != w.Reason || have[i].Message != w.Message {
			return true
		}
	}
	return false
}

// lastHeartbeat returns the heartbeat time of the Node's Ready condition,
// the zero time without one.
func lastHeartbeat(node *corev1.Node) time.Time {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastHeartbeatTime.Time
		}
	}
	return time.Time{}
}
