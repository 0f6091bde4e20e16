package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

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
	ops := []jsonPatchOp{
		setLabel(node, v1alpha1.LabelKeyNodeUpdateResult, v1alpha1.LabelValueNodeUpdateSuccessful),
		{Op: "add", Path: annotationPath(annotationCurrent), Value: target},
	}
	if _, ok := node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason]; ok {
		ops = append(ops, jsonPatchOp{Op: "remove", Path: annotationPath(v1alpha1.AnnotationKeyMachineUpdateFailedReason)})
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
	ops := []jsonPatchOp{
		setLabel(node, v1alpha1.LabelKeyNodeUpdateResult, v1alpha1.LabelValueNodeUpdateFailed),
		{Op: "add", Path: annotationPath(v1alpha1.AnnotationKeyMachineUpdateFailedReason), Value: reason},
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
func (a *agent) patch(ctx context.Context, node *corev1.Node, target string, ops []jsonPatchOp) error {
	ops = append([]jsonPatchOp{{Op: "test", Path: annotationPath(annotationDesired), Value: target}}, ops...)
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	patched := &corev1.Node{}
	patched.Name = node.Name
	if err := a.client.Patch(ctx, patched, client.RawPatch(types.JSONPatchType, data)); err != nil {
		if isConflict(err) {
			return fmt.Errorf("node %s changed while the result was reported (target %s); reading it again: %w", node.Name, target, err)
		}
		return fmt.Errorf("reporting the result on node %s: %w", node.Name, err)
	}
	return nil
}

// setLabel returns the operation that sets a label, creating the labels map
// when the Node has none.
func setLabel(node *corev1.Node, key, value string) jsonPatchOp {
	if node.Labels == nil {
		return jsonPatchOp{Op: "add", Path: "/metadata/labels", Value: map[string]string{key: value}}
	}
	return jsonPatchOp{Op: "add", Path: labelPath(key), Value: value}
}

// escape escapes a map key for a JSON pointer (RFC 6901).
func escape(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

func labelPath(key string) string      { return "/metadata/labels/" + escape(key) }
func annotationPath(key string) string { return "/metadata/annotations/" + escape(key) }
