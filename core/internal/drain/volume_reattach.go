package drain

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// reattachDone tells whether the wait w, whose volumes have detached from
// node, may end: every CSI volume of it (a PersistentVolume a
// VolumeAttachment names) is attached to another node, or the reattach
// timeout has passed since the detach. MCM waits the same way
// (--machine-pv-reattach-timeout, machine-controller-manager
// pkg/util/provider/drain/drain.go, waitForReattach), so that the next pod
// with volumes is evicted only once the previous one runs again elsewhere
// with its data: a StatefulSet moves one replica at a time. Only CSI
// volumes have VolumeAttachments; others (found through the driver's
// GetVolumeIDs) cannot be followed to another node and are not waited for. The first pass that sees
// the detach stamps w.DetachedAt; the wait (with the stamp) is stored by
// the caller between passes.
func (d *Drainer) reattachDone(ctx context.Context, node *corev1.Node, w *VolumeWait, opts Options, res *Result) (bool, error) {
	if opts.ReattachTimeout <= 0 || len(w.Volumes) == 0 {
		return true, nil
	}
	if w.DetachedAt == nil {
		t := metav1.NewTime(opts.now())
		w.DetachedAt = &t
	}
	csi, err := d.csiVolumes(ctx, w.Volumes)
	if err != nil || len(csi) == 0 {
		return err == nil, err
	}
	elsewhere, err := d.attachedElsewhere(ctx, node.Name, csi)
	if err != nil {
		return false, err
	}
	if elsewhere == len(csi) {
		return true, nil
	}
	if !opts.now().Before(w.DetachedAt.Add(opts.ReattachTimeout)) {
		res.ReattachTimedOut = append(res.ReattachTimedOut, w.Pod)
		return true, nil
	}
	res.Reattaching = len(csi) - elsewhere
	return false, nil
}

// csiVolumes are those of the PersistentVolumes named that are CSI
// volumes: only those have VolumeAttachments to follow.
func (d *Drainer) csiVolumes(ctx context.Context, names []string) ([]string, error) {
	var out []string
	for _, name := range names {
		list, err := d.client.CoreV1().PersistentVolumes().List(ctx, byName(name))
		if err != nil {
			return nil, fmt.Errorf("reading PersistentVolume %s: %w", name, err)
		}
		if len(list.Items) > 0 && list.Items[0].Spec.CSI != nil {
			out = append(out, name)
		}
	}
	return out, nil
}

// attachedElsewhere counts the volumes that a VolumeAttachment shows
// attached to a node other than nodeName.
func (d *Drainer) attachedElsewhere(ctx context.Context, nodeName string, volumes []string) (int, error) {
	attached := map[string]bool{}
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := d.client.StorageV1().VolumeAttachments().List(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("listing VolumeAttachments: %w", err)
		}
		for i := range list.Items {
			va := &list.Items[i]
			pv := va.Spec.Source.PersistentVolumeName
			if pv != nil && slices.Contains(volumes, *pv) && va.Spec.NodeName != nodeName && va.Status.Attached {
				attached[*pv] = true
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	return len(attached), nil
}
