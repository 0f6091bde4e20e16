package virtualnode

import (
	"context"
	"encoding/json"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

const (
	// leaseNamespace holds the Leases kubelets renew for their Nodes.
	leaseNamespace = corev1.NamespaceNodeLease
	// leaseDurationSeconds is what a kubelet puts on its Lease.
	leaseDurationSeconds = 40
)

// renewLease renews the Node's Lease in kube-node-lease, with the Node as
// owner so that it goes with the Node. The kubelets remember which Leases
// exist: the first beat of a Node creates its Lease (one request), later
// beats patch it (one request); a Lease that exists already (left by an
// earlier run of the driver or an earlier Node of that name) is taken over,
// one that vanished is created again.
func (k *kubelets) renewLease(ctx context.Context, cl *cluster, key nodeKey, node *corev1.Node, now time.Time) error {
	leases := cl.client.CoordinationV1().Leases(leaseNamespace)
	renew := metav1.NewMicroTime(now)
	k.mu.Lock()
	known := k.leases[key] == node.UID
	k.mu.Unlock()
	if known {
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"renewTime": renew}})
		if err != nil {
			return err
		}
		_, err = leases.Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			return err
		}
	}
	lease := leaseFor(node, renew)
	_, err := leases.Create(ctx, lease, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// A merge patch replaces the owner references as a whole, so the
		// Lease of an earlier Node of this name now belongs to this one.
		patch, merr := json.Marshal(map[string]any{
			"metadata": map[string]any{"ownerReferences": lease.OwnerReferences},
			"spec":     lease.Spec,
		})
		if merr != nil {
			return merr
		}
		_, err = leases.Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	}
	if err != nil {
		return err
	}
	k.mu.Lock()
	k.leases[key] = node.UID
	k.mu.Unlock()
	return nil
}

// leaseFor returns the Lease of a Node, renewed at renew.
func leaseFor(node *corev1.Node, renew metav1.MicroTime) *coordinationv1.Lease {
	return &coordinationv1.Lease{
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
	}
}
