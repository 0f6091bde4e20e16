// Package nodepatch builds the JSON patches (RFC 6902) the node agent
// reports with on its own Node: each guarded by a test that the Node still
// asks for what the agent worked on, so that a report never lands on a Node
// that was given another target since it was read.
package nodepatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Op is one operation of a JSON patch.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// escape escapes a map key for a JSON pointer (RFC 6901).
func escape(key string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
}

// LabelPath is the JSON pointer of a label.
func LabelPath(key string) string { return "/metadata/labels/" + escape(key) }

// AnnotationPath is the JSON pointer of an annotation.
func AnnotationPath(key string) string { return "/metadata/annotations/" + escape(key) }

// IsConflict reports a patch that did not apply because the Node changed
// under it (its test failed, or its resource version moved).
func IsConflict(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsConflict(err)
}

// Send patches Node node with ops, guarded by a test that the annotation
// key still has value want: a report never lands on a Node that was given
// another target since it was read. A failed guard is an error saying so,
// and the reconcile that follows reads the Node again.
func Send(ctx context.Context, c client.Client, node, key, want string, ops []Op) error {
	ops = append([]Op{{Op: "test", Path: AnnotationPath(key), Value: want}}, ops...)
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	patched := &corev1.Node{}
	patched.Name = node
	if err := c.Patch(ctx, patched, client.RawPatch(types.JSONPatchType, data)); err != nil {
		if IsConflict(err) {
			return fmt.Errorf("node %s changed while reporting on %s; reading it again: %w", node, want, err)
		}
		return fmt.Errorf("reporting on node %s: %w", node, err)
	}
	return nil
}
