package machinedeployment

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// validate is the first phase. A deployment whose selector is invalid,
// empty or does not select its template, whose strategy cannot be acted on
// (validateStrategy), or whose template holds a duration that cannot be used
// (one stored before the schema refused it, v1alpha1.Duration), or whose
// disruption budgets cannot be read (disruption.Validate), is reported
// and neither scaled nor rolled: a refused value is never clamped into
// something the user did not ask for. Its status only moves on to the
// generation (and, for the strategy or a duration, carries the Progressing
// condition with the reason); a spec change syncs it again, so it needs no
// resync. A valid deployment leaves its parsed selector in the
// scope.
func (r *Reconciler) validate(_ context.Context, s *scope) (phase.Result, error) {
	d := s.d
	refused := phase.Result{Stop: true, NoResync: true}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(d.Spec.Template.Labels)) {
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, "SelectingAll", "Validate", "The selector is invalid, empty or does not match the template labels; a non-empty selector matching the template is required")
		d.Status.ObservedGeneration = d.Generation
		return refused, nil
	}
	if err := validateStrategy(d); err != nil {
		s.log.Info("Invalid strategy; not scaling or rolling out", "error", err.Error())
		return r.refuse(s, ReasonInvalidStrategy, "The strategy cannot be acted on: "+err.Error()), nil
	}
	if bad := d.Spec.Template.Spec.MachineConfiguration.InvalidDurations(); len(bad) > 0 {
		// Stored before the schema refused such values (or past it): the
		// deployment decodes, and is refused alone, never its namespace.
		s.log.Info("Invalid duration in the template; not scaling or rolling out", "fields", bad)
		return r.refuse(s, ReasonInvalidDuration, "The template cannot be acted on: spec.template.spec."+strings.Join(bad, "; spec.template.spec.")), nil
	}
	if dis := d.Spec.Disruption; dis != nil {
		if err := disruption.Validate(dis.Budgets); err != nil {
			s.log.Info("Invalid disruption budget; not scaling or rolling out", "error", err.Error())
			return r.refuse(s, ReasonInvalidDisruptionBudget, "The disruption budgets cannot be acted on: "+err.Error()), nil
		}
	}
	if c := getCondition(&d.Status, v1alpha1.MachineDeploymentProgressing); c != nil && (c.Reason == ReasonInvalidStrategy || c.Reason == ReasonInvalidDuration || c.Reason == ReasonInvalidDisruptionBudget) {
		// Fixed: progress is judged afresh, from the machine set found or
		// created by this sync.
		removeCondition(&d.Status, v1alpha1.MachineDeploymentProgressing)
	}
	s.selector = selector
	return phase.Result{}, nil
}

// refuse reports a spec value the deployment cannot be acted on: a Warning
// event and the Progressing condition with reason and msg, which stays until
// the value is fixed. The deployment is neither scaled nor rolled.
func (r *Reconciler) refuse(s *scope, reason, msg string) phase.Result {
	d := s.d
	r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, reason, "Validate", "%s", msg)
	st := &d.Status
	st.ObservedGeneration = d.Generation
	c := newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionFalse, reason, msg, s.now)
	if cur := getCondition(st, v1alpha1.MachineDeploymentProgressing); cur != nil && cur.Reason == reason && cur.Message != msg {
		removeCondition(st, v1alpha1.MachineDeploymentProgressing) // another invalid value: new message
	}
	setCondition(st, c)
	return phase.Result{Stop: true, NoResync: true}
}
