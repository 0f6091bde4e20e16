package main

import (
	"context"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/nodepatch"
	"github.com/machina-io/machina/core/api/v1alpha1"
)

// reportSuccess writes update-result=successful and current=target and
// removes the failure reason, if the Node does not show all that already.
func (a *agent) reportSuccess(ctx context.Context, node *corev1.Node, target, how string) error {
	if node.Labels[v1alpha1.LabelKeyNodeUpdateResult] == v1alpha1.LabelValueNodeUpdateSuccessful &&
		node.Annotations[annotationCurrent] == target {
		_, hasReason := node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason]
		if !hasReason {
			return nil
		}
	}
	ops := []nodepatch.Op{
		setLabel(node, v1alpha1.LabelKeyNodeUpdateResult, v1alpha1.LabelValueNodeUpdateSuccessful),
		{Op: "add", Path: nodepatch.AnnotationPath(annotationCurrent), Value: target},
	}
	if _, ok := node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason]; ok {
		ops = append(ops, nodepatch.Op{Op: "remove", Path: nodepatch.AnnotationPath(v1alpha1.AnnotationKeyMachineUpdateFailedReason)})
	}
	if err := a.patch(ctx, node, target, ops); err != nil {
		return err
	}
	logr.FromContextOrDiscard(ctx).Info("Reported update successful", "how", how)
	return nil
}

// reportFailure writes update-result=failed and the reason.
func (a *agent) reportFailure(ctx context.Context, node *corev1.Node, target, reason string) error {
	if node.Labels[v1alpha1.LabelKeyNodeUpdateResult] == v1alpha1.LabelValueNodeUpdateFailed &&
		node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason] == reason {
		return nil
	}
	ops := []nodepatch.Op{
		setLabel(node, v1alpha1.LabelKeyNodeUpdateResult, v1alpha1.LabelValueNodeUpdateFailed),
		{Op: "add", Path: nodepatch.AnnotationPath(v1alpha1.AnnotationKeyMachineUpdateFailedReason), Value: reason},
	}
	if err := a.patch(ctx, node, target, ops); err != nil {
		return err
	}
	logr.FromContextOrDiscard(ctx).Info("Reported update failed", "reason", reason)
	return nil
}

// patch sends ops as a JSON patch of the Node's metadata, guarded by a test
// that the Node still asks for target: a result never lands on a Node that
// was given another target since it was read. A failed test is an error,
// and the reconcile that follows reads the Node again.
func (a *agent) patch(ctx context.Context, node *corev1.Node, target string, ops []nodepatch.Op) error {
	return nodepatch.Send(ctx, a.client, node.Name, annotationDesired, target, ops)
}

// setLabel returns the operation that sets a label, creating the labels map
// when the Node has none.
func setLabel(node *corev1.Node, key, value string) nodepatch.Op {
	if node.Labels == nil {
		return nodepatch.Op{Op: "add", Path: "/metadata/labels", Value: map[string]string{key: value}}
	}
	return nodepatch.Op{Op: "add", Path: nodepatch.LabelPath(key), Value: value}
}
