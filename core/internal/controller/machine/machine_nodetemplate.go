package machine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// reconcileNodeTemplate keeps the Node's labels, annotations and taints in
// line with the Machine's spec.nodeTemplate, by a three-way merge: what the
// template wants now, what the Node has, and what the controller applied
// last time (recorded on the Node in the annotation
// node.machine.sapcloud.io/last-applied-anno-labels-taints, in MCM's
// format). A key the controller applied before and the template no longer
// wants is removed; keys anyone else put on the Node are never touched.
func (r *Reconciler) reconcileNodeTemplate(ctx context.Context, s *scope) (phase.Result, error) {
	node, err := r.loadNode(ctx, s)
	if err != nil || node == nil {
		return phase.Result{}, err
	}
	desired := desiredTemplate(s.machine)
	updated, err := applyNodeTemplate(node, desired)
	if err != nil {
		return phase.Result{}, err
	}
	if equality.Semantic.DeepEqual(node, updated) {
		return phase.Result{}, nil
	}

	var opts []setup.PatchOption
	if !equality.Semantic.DeepEqual(node.Spec.Taints, updated.Spec.Taints) {
		// A merge patch replaces the whole taint list: lock, so that a taint
		// another controller added meanwhile is not lost.
		opts = append(opts, setup.LockObject())
	}
	if err := r.writeNode(ctx, node, updated, opts...); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return phase.Result{RequeueAfter: r.Options.ShortRetry}, nil
		}
		r.warning(s, reasonNodeTemplateSync, actionSync, "Applying the node template to node %s failed: %v", node.Name, err)
		return phase.Result{}, fmt.Errorf("applying node template to node %s: %w", node.Name, err)
	}
	s.log.V(1).Info("Applied node template", "node", node.Name)
	s.node = updated
	return phase.Result{}, nil
}

// desiredTemplate is the part of spec.nodeTemplate the controller applies.
func desiredTemplate(m *v1alpha1.Machine) v1alpha1.NodeTemplateSpec {
	nt := m.Spec.NodeTemplateSpec
	return v1alpha1.NodeTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: nt.Labels, Annotations: nt.Annotations},
		Spec:       corev1.NodeSpec{Taints: nt.Spec.Taints},
	}
}

// applyNodeTemplate returns a copy of node with desired applied by a
// three-way merge against the last-applied annotation.
func applyNodeTemplate(node *corev1.Node, desired v1alpha1.NodeTemplateSpec) (*corev1.Node, error) {
	raw := node.Annotations[v1alpha1.LastAppliedALTAnnotation]
	if raw == "" && len(desired.Labels) == 0 && len(desired.Annotations) == 0 && len(desired.Spec.Taints) == 0 {
		// Nothing applied before, nothing to apply: no write.
		return node.DeepCopy(), nil
	}
	var last v1alpha1.NodeTemplateSpec
	if raw != "" {
		// An unreadable record (edited by hand) is treated as empty: the
		// controller then only adds, never removes.
		_ = json.Unmarshal([]byte(raw), &last)
	}
	out := node.DeepCopy()

	out.Labels = mergeMap(out.Labels, last.Labels, desired.Labels)
	annotations := maps.Clone(desired.Annotations)
	delete(annotations, v1alpha1.LastAppliedALTAnnotation)
	lastAnnotations := maps.Clone(last.Annotations)
	delete(lastAnnotations, v1alpha1.LastAppliedALTAnnotation)
	out.Annotations = mergeMap(out.Annotations, lastAnnotations, annotations)
	out.Spec.Taints = mergeTaints(out.Spec.Taints, last.Spec.Taints, desired.Spec.Taints)

	record, err := json.Marshal(desired)
	if err != nil {
		return nil, fmt.Errorf("encoding the applied node template: %w", err)
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[v1alpha1.LastAppliedALTAnnotation] = string(record)
	return out, nil
}

// mergeMap removes from current the keys of last that desired no longer
// has, and sets every key of desired.
func mergeMap(current, last, desired map[string]string) map[string]string {
	out := maps.Clone(current)
	for k := range last {
		if _, keep := desired[k]; !keep {
			delete(out, k)
		}
	}
	if len(desired) > 0 && out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, desired)
	return out
}

// mergeTaints does for taints (identified by key and effect) what mergeMap
// does for labels.
func mergeTaints(current, last, desired []corev1.Taint) []corev1.Taint {
	same := func(a, b corev1.Taint) bool { return a.Key == b.Key && a.Effect == b.Effect }
	in := func(t corev1.Taint, list []corev1.Taint) (int, bool) {
		for i := range list {
			if same(t, list[i]) {
				return i, true
			}
		}
		return -1, false
	}
	var out []corev1.Taint
	for _, t := range current {
		_, wasOurs := in(t, last)
		_, wanted := in(t, desired)
		if wasOurs && !wanted {
			continue
		}
		out = append(out, t)
	}
	for _, t := range desired {
		if i, ok := in(t, out); ok {
			if out[i].Value != t.Value {
				out[i].Value = t.Value
			}
			continue
		}
		out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return out
}
