package overshoot

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// isFrozen reports whether obj carries the freeze label.
func isFrozen(obj client.Object) bool {
	return obj.GetLabels()[v1alpha1.FreezeLabel] == v1alpha1.FreezeValue
}

// hasUnfreezeAnnotation reports whether obj asks to be unfrozen. Like MCM,
// any value counts, except an explicit "false".
func hasUnfreezeAnnotation(obj client.Object) bool {
	v, ok := obj.GetAnnotations()[v1alpha1.UnfreezeAnnotation]
	return ok && !strings.EqualFold(v, "false")
}

// freezeSet labels ms frozen, sets its Frozen condition and emits
// FrozeMachineSet.
func (r *Reconciler) freezeSet(ctx context.Context, ms *v1alpha1.MachineSet, msg string) error {
	if err := r.patchLabels(ctx, ms, true, false); err != nil {
		return err
	}
	if err := r.patchSetCondition(ctx, ms, &v1alpha1.MachineSetCondition{
		Type:    v1alpha1.MachineSetFrozen,
		Status:  v1alpha1.ConditionTrue,
		Reason:  v1alpha1.OverShootingReplicaCount,
		Message: msg,
	}); err != nil {
		return err
	}
	r.Recorder.Eventf(ms, nil, corev1.EventTypeWarning, ReasonFrozeMachineSet, "Freeze",
		"Froze the machine set: %s; no machines are created until it is unfrozen", msg)
	return nil
}

// unfreezeSet removes the freeze label, the unfreeze annotation and the
// Frozen condition from ms and emits UnfrozeMachineSet. A set that is not
// frozen only loses the annotation.
func (r *Reconciler) unfreezeSet(ctx context.Context, ms *v1alpha1.MachineSet, why string) error {
	wasFrozen := isFrozen(ms)
	if err := r.patchLabels(ctx, ms, false, true); err != nil {
		return err
	}
	if err := r.patchSetCondition(ctx, ms, nil); err != nil {
		return err
	}
	if wasFrozen {
		r.Recorder.Eventf(ms, nil, corev1.EventTypeNormal, ReasonUnfrozeMachineSet, "Unfreeze", "Unfroze the machine set: %s", why)
	}
	return nil
}

// patchLabels sets (frozen) or removes the freeze label of obj, and removes
// its unfreeze annotation when dropAnnotation is set, with one merge patch
// of the metadata. Nothing is written when nothing changes.
func (r *Reconciler) patchLabels(ctx context.Context, obj client.Object, frozen, dropAnnotation bool) error {
	_, annotated := obj.GetAnnotations()[v1alpha1.UnfreezeAnnotation]
	if isFrozen(obj) == frozen && !(dropAnnotation && annotated) {
		return nil
	}
	base := obj.DeepCopyObject().(client.Object)
	labels := obj.GetLabels()
	if frozen {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[v1alpha1.FreezeLabel] = v1alpha1.FreezeValue
	} else {
		delete(labels, v1alpha1.FreezeLabel)
	}
	obj.SetLabels(labels)
	if dropAnnotation && annotated {
		annotations := obj.GetAnnotations()
		delete(annotations, v1alpha1.UnfreezeAnnotation)
		obj.SetAnnotations(annotations)
	}
	return r.Client.Patch(ctx, obj, client.MergeFrom(base))
}

// patchSetCondition sets ms's Frozen condition to c, or removes it when c
// is nil, with an optimistic lock: the MachineSet controller writes the
// same status.
func (r *Reconciler) patchSetCondition(ctx context.Context, ms *v1alpha1.MachineSet, c *v1alpha1.MachineSetCondition) error {
	conds, changed := setFrozen(ms.Status.Conditions, c, setConditionFields)
	if !changed {
		return nil
	}
	base := ms.DeepCopy()
	ms.Status.Conditions = conds
	return r.Client.Status().Patch(ctx, ms, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// patchDeploymentCondition is patchSetCondition for a MachineDeployment.
func (r *Reconciler) patchDeploymentCondition(ctx context.Context, md *v1alpha1.MachineDeployment, c *v1alpha1.MachineDeploymentCondition) error {
	conds, changed := setFrozen(md.Status.Conditions, c, deploymentConditionFields)
	if !changed {
		return nil
	}
	base := md.DeepCopy()
	md.Status.Conditions = conds
	return r.Client.Status().Patch(ctx, md, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// forwardUnfreeze hands md's unfreeze annotation on to each of its sets and
// removes it from md; the sets unfreeze themselves when reconciled.
func (r *Reconciler) forwardUnfreeze(ctx context.Context, md *v1alpha1.MachineDeployment) error {
	sets, err := r.setsOf(ctx, md)
	if err != nil {
		return err
	}
	for _, ms := range sets {
		if hasUnfreezeAnnotation(ms) {
			continue
		}
		base := ms.DeepCopy()
		annotations := ms.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.UnfreezeAnnotation] = "True"
		ms.SetAnnotations(annotations)
		if err := r.Client.Patch(ctx, ms, client.MergeFrom(base)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	ctrl.LoggerFrom(ctx).Info("Unfreezing machine deployment and its machine sets: unfreeze annotation", "machineDeployment", md.Name)
	return r.patchLabels(ctx, md, isFrozen(md), true)
}

// syncDeployment makes md frozen exactly while one of its sets is frozen.
// ms is the set just reconciled, whose state may be newer than the cache's.
func (r *Reconciler) syncDeployment(ctx context.Context, md *v1alpha1.MachineDeployment, ms *v1alpha1.MachineSet) error {
	sets, err := r.setsOf(ctx, md)
	if err != nil {
		return err
	}
	var frozenSet *v1alpha1.MachineSet
	for _, s := range sets {
		if s.UID == ms.UID {
			s = ms
		}
		if s.DeletionTimestamp == nil && isFrozen(s) {
			frozenSet = s
			break
		}
	}
	if frozenSet == nil && ms.DeletionTimestamp == nil && isFrozen(ms) {
		frozenSet = ms // not in the cache's list yet
	}
	if frozenSet == nil {
		if !isFrozen(md) && !hasFrozenCondition(md) {
			return nil
		}
		ctrl.LoggerFrom(ctx).Info("Unfreezing machine deployment: none of its machine sets is frozen", "machineDeployment", md.Name)
		if err := r.patchLabels(ctx, md, false, false); err != nil {
			return err
		}
		return r.patchDeploymentCondition(ctx, md, nil)
	}
	reason, msg := v1alpha1.MachineDeploymentStateSync, "MachineSet "+frozenSet.Name+" is frozen"
	if c := frozenCondition(frozenSet); c != nil && c.Reason == v1alpha1.OverShootingReplicaCount {
		reason, msg = v1alpha1.OverShootingReplicaCount, c.Message
	}
	if !isFrozen(md) {
		// Logged by whichever set of md is reconciled first, not always the
		// frozen one: the key names the set that froze.
		ctrl.LoggerFrom(ctx).Info("Freezing machine deployment: a machine set is frozen", "machineDeployment", md.Name, "frozenMachineSet", frozenSet.Name)
	}
	if err := r.patchLabels(ctx, md, true, false); err != nil {
		return err
	}
	if hasFrozenCondition(md) {
		return nil // keep the first reason rather than flip-flopping between sets
	}
	return r.patchDeploymentCondition(ctx, md, &v1alpha1.MachineDeploymentCondition{
		Type:    v1alpha1.MachineDeploymentFrozen,
		Status:  v1alpha1.ConditionTrue,
		Reason:  reason,
		Message: msg,
	})
}

func frozenCondition(ms *v1alpha1.MachineSet) *v1alpha1.MachineSetCondition {
	for i := range ms.Status.Conditions {
		if ms.Status.Conditions[i].Type == v1alpha1.MachineSetFrozen {
			return &ms.Status.Conditions[i]
		}
	}
	return nil
}

func hasFrozenCondition(md *v1alpha1.MachineDeployment) bool {
	for _, c := range md.Status.Conditions {
		if c.Type == v1alpha1.MachineDeploymentFrozen {
			return true
		}
	}
	return false
}
