package drain

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeleteVolumeAttachments deletes the VolumeAttachments that attach volumes
// to the Node named nodeName and returns how many of them still exist (being
// deleted, e.g. held by an attacher's finalizer). It does not wait; call it
// again until it returns zero.
//
// This follows a forced drain only: the pods were deleted without their
// kubelet unmounting anything, so the attach/detach controller would
// otherwise wait for a detach confirmation that never comes, and the volumes
// could not be attached elsewhere.
func (d *Drainer) DeleteVolumeAttachments(ctx context.Context, nodeName string) (remaining int, err error) {
	// VolumeAttachments offer no field selector on spec.nodeName; the list is
	// small (one per attached volume in the cluster) and paged.
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := d.client.StorageV1().VolumeAttachments().List(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("listing VolumeAttachments: %w", err)
		}
		for i := range list.Items {
			va := &list.Items[i]
			if va.Spec.NodeName != nodeName {
				continue
			}
			if va.DeletionTimestamp == nil {
				err := d.client.StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{})
				if apierrors.IsNotFound(err) {
					continue
				}
				if err != nil {
					return 0, fmt.Errorf("deleting VolumeAttachment %s: %w", va.Name, err)
				}
			}
			// Counted until a later list no longer shows it: a delete may
			// only set the deletion timestamp.
			remaining++
		}
		if list.Continue == "" {
			return remaining, nil
		}
		opts.Continue = list.Continue
	}
}
