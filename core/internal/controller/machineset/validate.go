package machineset

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// validate is the first phase: a set without a usable selector
// (validSelector), or whose template holds a duration that cannot be used
// (v1alpha1.Duration), is not synced; its status only moves on to the generation.
// A spec change syncs it again, so it needs no resync. A valid set leaves
// its parsed selector in the scope.
func (r *Reconciler) validate(ctx context.Context, s *scope) (phase.Result, error) {
	selector, ok := r.validSelector(ctx, s.ms)
	if !ok {
		st := observedOnly(s.ms)
		s.status = &st
		return phase.Result{Stop: true, NoResync: true}, nil
	}
	if bad := s.ms.Spec.Template.Spec.MachineConfiguration.InvalidDurations(); len(bad) > 0 {
		// Stored before the schema refused such values (or past it): the
		// set decodes and is refused alone, never its namespace. Its
		// machines are neither created nor deleted until the value is
		// fixed.
		problem := "The template cannot be acted on: spec.template.spec." + strings.Join(bad, "; spec.template.spec.")
		ctrl.LoggerFrom(ctx).Info("Not syncing machine set", "reason", problem)
		r.Recorder.Eventf(s.ms, nil, corev1.EventTypeWarning, "InvalidDuration", "Validate", "%s", problem)
		st := observedOnly(s.ms)
		s.status = &st
		return phase.Result{Stop: true, NoResync: true}, nil
	}
	if ea := s.ms.Spec.Template.Spec.MachineConfiguration; ea != nil && ea.MachineExpireAfter != nil && ea.MachineExpireAfter.Duration > 0 && !ownedByDeployment(s.ms) {
		// Expiry is the MachineDeployment's (its maxUnavailable bounds it):
		// a set of its own says that it does not act on the field.
		r.Recorder.Eventf(s.ms, nil, corev1.EventTypeWarning, "ExpireAfterIgnored", "Validate",
			"spec.template.spec.expireAfter is acted on only for machine sets of a MachineDeployment; this set's machines do not expire")
	}
	s.selector = selector
	return phase.Result{}, nil
}

// ownedByDeployment reports whether a MachineDeployment controls the set.
func ownedByDeployment(ms *v1alpha1.MachineSet) bool {
	ref := metav1.GetControllerOf(ms)
	return ref != nil && ref.Kind == "MachineDeployment"
}

// validSelector parses the selector and checks that it is not empty and
// selects the template's labels; a set without a usable selector would take
// or create machines it can never count. Problems are reported as events.
func (r *Reconciler) validSelector(ctx context.Context, ms *v1alpha1.MachineSet) (labels.Selector, bool) {
	sel, err := metav1.LabelSelectorAsSelector(ms.Spec.Selector)
	var problem string
	switch {
	case err != nil:
		problem = fmt.Sprintf("Invalid selector: %v", err)
	case sel.Empty():
		problem = "The selector is empty; a non-empty selector is required"
	case !sel.Matches(labels.Set(ms.Spec.Template.Labels)):
		problem = "The selector does not match the template's labels"
	}
	if problem != "" {
		ctrl.LoggerFrom(ctx).Info("Not syncing machine set", "reason", problem)
		r.Recorder.Eventf(ms, nil, corev1.EventTypeWarning, "InvalidSelector", "Validate", "%s", problem)
		return nil, false
	}
	return sel, true
}

// observedOnly is the stored status with observedGeneration moved on, for a
// set the controller cannot act on.
func observedOnly(ms *v1alpha1.MachineSet) v1alpha1.MachineSetStatus {
	st := *ms.Status.DeepCopy()
	st.ObservedGeneration = ms.Generation
	return st
}
