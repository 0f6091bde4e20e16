package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/drainorder"
)

// drainPlan is what a drain of a Node would do now, computed with the
// core's filters and order (core/drainorder) from what the target cluster
// holds. Nothing is changed.
type drainPlan struct {
	node *corev1.Node
	// evict are the pods the drain removes, in order: step 1 is the first
	// pass, which evicts every pod without a PersistentVolumeClaim at once;
	// each later step is one pod with claims.
	evict []plannedPod
	// skipped are the pods of the Node the drain leaves alone.
	skipped []skippedPod
}

type plannedPod struct {
	pod  corev1.Pod
	step int
	// terminating pods are not evicted again; the drain waits for them.
	terminating bool
	// blockedBy names the PodDisruptionBudgets that allow no disruption of
	// the pod now: its eviction would be refused (429) until they do.
	blockedBy []string
	// limitedBy names the budgets that allow fewer disruptions than the
	// Node has pods under them: some of those evictions wait for the others.
	limitedBy []string
	// volumes are the pod's PersistentVolumes (or claims not bound yet).
	volumes []string
	// attached are the VolumeAttachments of the pod's volumes to the Node;
	// the drain waits for them to go before the next step.
	attached []string
}

type skippedPod struct {
	pod    corev1.Pod
	reason string
}

// planDrain computes the drain plan for the Node; node is nil in the plan
// when it does not exist.
func planDrain(ctx context.Context, c *clients, nodeName string) (*drainPlan, error) {
	node, err := c.node(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	p := &drainPlan{node: node}
	if node == nil {
		return p, nil
	}
	list, errs := drainorder.Filters(ctx, c.targetSet).GetPodsForDeletion(nodeName)
	if len(errs) > 0 {
		return nil, fmt.Errorf("listing the pods of node %s: %w", nodeName, errors.Join(errs...))
	}
	removed := map[string]bool{}
	for _, pod := range list.Pods() {
		removed[podKey(&pod)] = true
	}

	pdbs, err := c.disruptionBudgets(ctx)
	if err != nil {
		return nil, err
	}
	attachments, err := c.volumeAttachments(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	// The drain's order (drainorder.Groups): the pods that are not critical,
	// then the critical ones; in each group the pods without claims in one
	// step, then those with claims one step each.
	step := 0
	for _, group := range drainorder.Groups(list.Pods()) {
		var first, serial []corev1.Pod
		for _, pod := range group {
			if drainorder.Serial(&pod) {
				serial = append(serial, pod)
			} else {
				first = append(first, pod)
			}
		}
		sort.SliceStable(first, func(i, j int) bool { return podKey(&first[i]) < podKey(&first[j]) })
		drainorder.SortSerial(serial)
		if len(first) > 0 {
			step++
		}
		for _, pod := range first {
			p.evict = append(p.evict, plannedPod{pod: pod, step: step})
		}
		for _, pod := range serial {
			step++
			pp := plannedPod{pod: pod, step: step}
			if pp.volumes, err = c.podVolumes(ctx, &pod); err != nil {
				return nil, err
			}
			for _, va := range attachments {
				if pv := va.Spec.Source.PersistentVolumeName; pv != nil && slices.Contains(pp.volumes, *pv) {
					pp.attached = append(pp.attached, va.Name)
				}
			}
			p.evict = append(p.evict, pp)
		}
	}
	for i := range p.evict {
		pp := &p.evict[i]
		pp.terminating = pp.pod.DeletionTimestamp != nil
		pp.blockedBy, pp.limitedBy = budgetsOf(&pp.pod, pdbs, p.evict)
	}

	var all corev1.PodList
	if err := c.target.List(ctx, &all, client.MatchingFields{"spec.nodeName": nodeName}); err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", nodeName, err)
	}
	for _, pod := range all.Items {
		if !removed[podKey(&pod)] {
			p.skipped = append(p.skipped, skippedPod{pod: pod, reason: skipReason(&pod)})
		}
	}
	sort.Slice(p.skipped, func(i, j int) bool { return podKey(&p.skipped[i].pod) < podKey(&p.skipped[j].pod) })
	return p, nil
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// skipReason says why kubectl's filters, as the core configures them, leave
// the pod on the Node.
func skipReason(p *corev1.Pod) string {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return "mirror pod (static, owned by the kubelet)"
	}
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
		return "DaemonSet " + ref.Name + " (its controller would put it back)"
	}
	if p.Labels[drainorder.DrainLabel] == drainorder.DrainSkip {
		return "labelled " + drainorder.DrainLabel + "=" + drainorder.DrainSkip
	}
	return "kept by the drain's pod filters"
}

// disruptionBudgets are the PodDisruptionBudgets of the target cluster.
func (c *clients) disruptionBudgets(ctx context.Context) ([]policyv1.PodDisruptionBudget, error) {
	var l policyv1.PodDisruptionBudgetList
	if err := c.target.List(ctx, &l); err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	return l.Items, nil
}

// budgetsOf finds the budgets that cover the pod: blocked by those that
// allow no disruption now, limited by those that allow fewer than the plan
// evicts under them.
func budgetsOf(pod *corev1.Pod, pdbs []policyv1.PodDisruptionBudget, plan []plannedPod) (blocked, limited []string) {
	for i := range pdbs {
		pdb := &pdbs[i]
		if !covers(pdb, pod) {
			continue
		}
		name := "PodDisruptionBudget " + pdb.Namespace + "/" + pdb.Name
		allowed := pdb.Status.DisruptionsAllowed
		if allowed < 1 {
			blocked = append(blocked, fmt.Sprintf("%s (0 disruptions allowed)", name))
			continue
		}
		covered := 0
		for j := range plan {
			if covers(pdb, &plan[j].pod) {
				covered++
			}
		}
		if int(allowed) < covered {
			limited = append(limited, fmt.Sprintf("%s (%d of %d at a time)", name, allowed, covered))
		}
	}
	return blocked, limited
}

// covers tells whether the budget selects the pod, as the Eviction API
// decides it: same namespace, and the selector matches (policy/v1: an empty
// selector selects every pod, a missing one none).
func covers(pdb *policyv1.PodDisruptionBudget, pod *corev1.Pod) bool {
	if pdb.Namespace != pod.Namespace || pdb.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(pod.Labels))
}

// volumeAttachments are the VolumeAttachments to the Node.
func (c *clients) volumeAttachments(ctx context.Context, nodeName string) ([]storagev1.VolumeAttachment, error) {
	var l storagev1.VolumeAttachmentList
	if err := c.target.List(ctx, &l); err != nil {
		return nil, fmt.Errorf("listing VolumeAttachments: %w", err)
	}
	var out []storagev1.VolumeAttachment
	for _, va := range l.Items {
		if va.Spec.NodeName == nodeName {
			out = append(out, va)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// podVolumes are the PersistentVolumes of the pod's claims; a claim that is
// not bound is named as "claim/NAME (unbound)".
func (c *clients) podVolumes(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	var out []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		err := c.target.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc)
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, "claim/"+v.PersistentVolumeClaim.ClaimName+" (missing)")
		case err != nil:
			return nil, fmt.Errorf("reading PersistentVolumeClaim %s/%s: %w", pod.Namespace, v.PersistentVolumeClaim.ClaimName, err)
		case pvc.Spec.VolumeName == "":
			out = append(out, "claim/"+pvc.Name+" (unbound)")
		default:
			out = append(out, pvc.Spec.VolumeName)
		}
	}
	return out, nil
}
