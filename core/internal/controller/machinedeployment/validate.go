package machinedeployment

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// validate is the first phase. A deployment whose selector is invalid,
// empty or does not select its template, or whose strategy cannot be acted
// on (validateStrategy), is reported and neither scaled nor rolled: a refused
// value is never clamped into something the user did not ask for. Its status
// only moves on to the generation (and, for the strategy, carries the
// Progressing condition with the reason); a spec change syncs it again, so it
// needs no resync. A valid deployment leaves its parsed selector in the
// scope.
func (r *Reconciler) validate(_ context.Context, s *scope) (phase.Result, error) {
	d := s.d
	refused := phase.Result{Stop: true, NoResync: true}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(d.Spec.Template.Labels)) {
		r.Recorder.Event(d, corev1.EventTypeWarning, "SelectingAll", "The selector is invalid, empty or does not match the template labels; a non-empty selector matching the template is required")
		d.Status.ObservedGeneration = d.Generation
		return refused, nil
	}
	if err := validateStrategy(d); err != nil {
		// The condition stays until the strategy is fixed.
		msg := "The strategy cannot be acted on: " + err.Error()
		r.Recorder.Event(d, corev1.EventTypeWarning, ReasonInvalidStrategy, msg)
		s.log.Info("Invalid strategy; not scaling or rolling out", "error", err.Error())
		st := &d.Status
		st.ObservedGeneration = d.Generation
		c := newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionFalse, ReasonInvalidStrategy, msg, s.now)
		if cur := getCondition(st, v1alpha1.MachineDeploymentProgressing); cur != nil && cur.Reason == ReasonInvalidStrategy && cur.Message != msg {
			removeCondition(st, v1alpha1.MachineDeploymentProgressing) // another invalid value: new message
		}
		setCondition(st, c)
		return refused, nil
	}
	if c := getCondition(&d.Status, v1alpha1.MachineDeploymentProgressing); c != nil && c.Reason == ReasonInvalidStrategy {
		// Fixed: progress is judged afresh, from the machine set found or
		// created by this sync.
		removeCondition(&d.Status, v1alpha1.MachineDeploymentProgressing)
	}
	s.selector = selector
	return phase.Result{}, nil
}
