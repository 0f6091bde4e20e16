package drain

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/machina-io/machina/core/drainorder"
)

// DefaultDetachTimeout is how long a drain waits for the volumes of one
// evicted pod to detach before it goes on (--machine-pv-detach-timeout).
const DefaultDetachTimeout = 2 * time.Minute

// VolumeIDsFunc maps PersistentVolumes to the IDs the provider's disks have
// in Node.status.volumesAttached (the driver's GetVolumeIDs). Volumes that
// are no disks of the provider are left out of the answer.
type VolumeIDsFunc func(ctx context.Context, pvs []*corev1.PersistentVolume) (map[string]string, error)

// VolumeWait is the drain's wait for the volumes of one evicted pod to
// detach from the Node. A pass returns it and the caller stores it (on the
// Machine) and hands it to the next pass, so that the wait survives
// restarts and no worker is held while it lasts.
type VolumeWait struct {
	// Pod is the evicted pod, "namespace/name".
	Pod string `json:"pod"`
	// Since is when the pod was evicted; the detach timeout counts from it.
	Since metav1.Time `json:"since"`
	// Volumes are the names of the pod's PersistentVolumes.
	Volumes []string `json:"volumes,omitempty"`
	// VolumeIDs are the provider IDs of those of Volumes the driver knows
	// (GetVolumeIDs), looked for in Node.status.volumesAttached.
	VolumeIDs []string `json:"volumeIDs,omitempty"`
	// DetachedAt is when a pass first saw the volumes detached; the wait
	// for them to be attached elsewhere (reattachDone) counts from it.
	DetachedAt *metav1.Time `json:"detachedAt,omitempty"`
}

// podKey is "namespace/name".
func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// hasPersistentVolume tells whether the pod is drained serially, after the
// volumes of the previous one detached (drainorder.Serial).
func hasPersistentVolume(p *corev1.Pod) bool { return drainorder.Serial(p) }

// sortByPriority orders pods with volumes for their serial eviction
// (drainorder.SortSerial: higher priority first, then by name).
func sortByPriority(pods []corev1.Pod) { drainorder.SortSerial(pods) }

// startWait begins the wait for pod, evicted at since: it resolves the PersistentVolumes of pod (through its claims) and
// their provider IDs, for the wait that follows its eviction. A claim that
// is gone or unbound has no volume to wait for.
func (d *Drainer) startWait(ctx context.Context, pod *corev1.Pod, since time.Time, opts Options) (*VolumeWait, error) {
	w := &VolumeWait{Pod: podKey(pod), Since: metav1.NewTime(since)}
	var pvs []*corev1.PersistentVolume
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		claims, err := d.client.CoreV1().PersistentVolumeClaims(pod.Namespace).List(ctx, byName(v.PersistentVolumeClaim.ClaimName))
		if err != nil {
			return nil, fmt.Errorf("reading PersistentVolumeClaim %s/%s: %w", pod.Namespace, v.PersistentVolumeClaim.ClaimName, err)
		}
		if len(claims.Items) == 0 {
			continue
		}
		pvc := &claims.Items[0]
		if pvc.Spec.VolumeName == "" || slices.Contains(w.Volumes, pvc.Spec.VolumeName) {
			continue
		}
		w.Volumes = append(w.Volumes, pvc.Spec.VolumeName)
		vols, err := d.client.CoreV1().PersistentVolumes().List(ctx, byName(pvc.Spec.VolumeName))
		if err != nil {
			return nil, fmt.Errorf("reading PersistentVolume %s: %w", pvc.Spec.VolumeName, err)
		}
		if len(vols.Items) > 0 {
			pvs = append(pvs, &vols.Items[0])
		}
	}
	if opts.VolumeIDs != nil && len(pvs) > 0 {
		ids, err := opts.VolumeIDs(ctx, pvs)
		if err != nil {
			return nil, fmt.Errorf("mapping the volumes of pod %s to provider IDs: %w", w.Pod, err)
		}
		for _, pv := range pvs {
			if id := ids[pv.Name]; id != "" {
				w.VolumeIDs = append(w.VolumeIDs, id)
			}
		}
	}
	return w, nil
}

// attachedVolumes counts the volumes of w still attached to node: a
// VolumeAttachment of node for one of its PersistentVolumes (CSI volumes;
// the attach/detach controller deletes it once the volume is detached), or
// an entry of node.status.volumesAttached whose name contains one of its
// provider IDs (volumes without a VolumeAttachment, found through the
// driver's GetVolumeIDs).
func (d *Drainer) attachedVolumes(ctx context.Context, node *corev1.Node, w *VolumeWait) (int, error) {
	attached := map[string]bool{}
	if len(w.Volumes) > 0 {
		opts := metav1.ListOptions{Limit: 500}
		for {
			list, err := d.client.StorageV1().VolumeAttachments().List(ctx, opts)
			if err != nil {
				return 0, fmt.Errorf("listing VolumeAttachments: %w", err)
			}
			for i := range list.Items {
				va := &list.Items[i]
				pv := va.Spec.Source.PersistentVolumeName
				if va.Spec.NodeName == node.Name && pv != nil && slices.Contains(w.Volumes, *pv) {
					attached["pv:"+*pv] = true
				}
			}
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
	}
	for _, id := range w.VolumeIDs {
		for _, av := range node.Status.VolumesAttached {
			if strings.Contains(string(av.Name), id) {
				attached["id:"+id] = true
			}
		}
	}
	return len(attached), nil
}

// drainVolumePods runs the serial part of a graceful pass over the pods
// with volumes: it finishes the current wait (the pod gone and its volumes
// detached, or the detach timeout passed), then evicts the next pod and
// starts waiting for it. It evicts at most one pod per pass that it then
// has to wait for. Every pod with volumes still on the Node counts as
// remaining, also one whose wait timed out: the drain is done only when
// they are gone (or it is forced).
func (d *Drainer) drainVolumePods(ctx context.Context, node *corev1.Node, pods []corev1.Pod, opts Options, res *Result) error {
	sortByPriority(pods)
	res.Remaining += len(pods)
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			res.Terminating++
		}
	}
	handled := map[string]bool{}
	wait := opts.Wait
	for {
		if wait != nil {
			done, err := d.finishWait(ctx, node, pods, wait, opts, res)
			if err != nil || !done {
				res.Waiting = wait
				return err
			}
			handled[wait.Pod] = true
			wait = nil
		}
		// The next pod: one already terminating first (evicted by someone
		// else, or its wait was lost), else the first by priority.
		var next *corev1.Pod
		for i := range pods {
			p := &pods[i]
			if handled[podKey(p)] {
				continue
			}
			if next == nil || (p.DeletionTimestamp != nil && next.DeletionTimestamp == nil) {
				next = p
			}
		}
		if next == nil {
			return nil
		}
		since := opts.now()
		if next.DeletionTimestamp != nil {
			// Evicted earlier: its wait counts from its deletion (the
			// timestamp is the deletion's time plus the grace period).
			since = next.DeletionTimestamp.Time
			if g := next.DeletionGracePeriodSeconds; g != nil {
				since = since.Add(-time.Duration(*g) * time.Second)
			}
		} else {
			err := d.evict(ctx, *next)
			if apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				err = d.client.CoreV1().Pods(next.Namespace).Delete(ctx, next.Name, metav1.DeleteOptions{})
			}
			switch {
			case err == nil:
				res.Evicted++
			case apierrors.IsNotFound(err):
				// Gone already; its volumes are still waited for.
			case apierrors.IsTooManyRequests(err):
				return d.blocked(ctx, next, res)
			default:
				if res.Failed == nil {
					res.Failed = map[string]string{}
				}
				res.Failed[podKey(next)] = err.Error()
				return nil
			}
		}
		w, err := d.startWait(ctx, next, since, opts)
		if err != nil {
			return err
		}
		// The wait is looked at again at once: a pod without bound volumes
		// does not hold the drain for a pass.
		wait = w
	}
}

// finishWait tells whether the wait w is over: its pod is gone and none of
// its volumes is attached to node any more, or the detach timeout has
// passed (noted in res.DetachTimedOut; the drain goes on to the next pod
// without the detach, as MCM does).
func (d *Drainer) finishWait(ctx context.Context, node *corev1.Node, pods []corev1.Pod, w *VolumeWait, opts Options, res *Result) (bool, error) {
	timedOut := !opts.now().Before(w.Since.Add(opts.detachTimeout()))
	if slices.ContainsFunc(pods, func(p corev1.Pod) bool { return podKey(&p) == w.Pod }) {
		// Its volumes cannot detach before the pod is gone.
		if timedOut {
			res.DetachTimedOut = append(res.DetachTimedOut, w.Pod)
			return true, nil
		}
		return false, nil
	}
	n, err := d.attachedVolumes(ctx, node, w)
	if err != nil {
		return false, err
	}
	if n == 0 {
		return d.reattachDone(ctx, node, w, opts, res)
	}
	if timedOut {
		res.DetachTimedOut = append(res.DetachTimedOut, w.Pod)
		return true, nil
	}
	res.AttachedVolumes = n
	return false, nil
}

// byName lists the one object named name. Claims and volumes are read with
// list rather than get because list (with watch) is what the manager's
// target-cluster role grants on them (deploy/base/rbac/target).
func byName(name string) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()}
}
