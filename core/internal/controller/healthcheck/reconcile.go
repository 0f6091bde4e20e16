package healthcheck

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/freeze"
)

// Event reasons.
const (
	// ReasonRemediated (on the check, the machine related): an unhealthy
	// machine was deleted so that its MachineSet replaces it.
	ReasonRemediated = "Remediated"
	// ReasonRemediationRestricted (on the check): too many machines are
	// unhealthy; none is remediated.
	ReasonRemediationRestricted = "RemediationRestricted"
	// ReasonRemediationNotSupported (on the machine): it is unhealthy but no
	// MachineSet controls it, so deleting it would replace nothing.
	ReasonRemediationNotSupported = "RemediationNotSupported"
	// ReasonInvalidSpec (on the check): its spec cannot be acted on.
	ReasonInvalidSpec = "InvalidSpec"
)

// scope is what one reconcile of a check reads and decides.
type scope struct {
	check *machinaio.MachineHealthCheck
	orig  *machinaio.MachineHealthCheck
	now   time.Time
	// patcher writes the status at the end (writeStatus).
	patcher *setup.Patcher

	// requestKind is the kind of the remediation requests, when the check
	// has a remediation template.
	requestKind schema.GroupVersionKind

	verdicts []verdict
	healthy  int
	limit    limit
}

// Reconcile runs one check: judge its machines, apply the short-circuit,
// remediate, and write the status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	check := &machinaio.MachineHealthCheck{}
	if err := r.Control.Get(ctx, req.NamespacedName, check); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !check.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	s := &scope{check: check, orig: check.DeepCopy(), now: r.now(), patcher: setup.NewPatcher(r.Control, check)}
	res, err := phase.Run(ctx, s, r.judge, r.decide, r.remediate)
	if werr := r.writeStatus(ctx, s); werr != nil && err == nil {
		err = werr
	}
	return setup.RequeueOnConflict(res.Requeue(setup.DefaultResyncPeriod), err)
}

// judge reads the check's machines and their Nodes and judges each.
func (r *Reconciler) judge(ctx context.Context, s *scope) (phase.Result, error) {
	sel, err := parseSpec(&s.check.Spec)
	if err == nil && s.check.Spec.RemediationTemplate != nil {
		s.requestKind, err = templateRef(s.check)
	}
	if err != nil {
		r.refuse(s, err)
		return phase.Result{Stop: true}, nil
	}
	machines := &v1alpha1.MachineList{}
	if err := r.Control.List(ctx, machines, client.InNamespace(s.check.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return phase.Result{}, fmt.Errorf("listing the machines of the check: %w", err)
	}
	var res phase.Result
	for i := range machines.Items {
		m := &machines.Items[i]
		if skipped(m) {
			continue
		}
		node, err := r.nodeOf(ctx, m)
		if err != nil {
			return phase.Result{}, err
		}
		v := evaluate(&s.check.Spec, m, node, s.now)
		s.verdicts = append(s.verdicts, v)
		if v.healthy {
			s.healthy++
		}
		res = res.Merge(phase.Result{RequeueAfter: v.recheck})
	}
	return res, nil
}

// nodeOf reads the Node a machine names, nil when it names none or the
// Node does not exist.
func (r *Reconciler) nodeOf(ctx context.Context, m *v1alpha1.Machine) (*corev1.Node, error) {
	name := m.Labels[v1alpha1.NodeLabelKey]
	if name == "" {
		return nil, nil
	}
	node := &corev1.Node{}
	if err := r.Target.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading node %s of machine %s: %w", name, m.Name, err)
	}
	return node, nil
}

// decide applies the short-circuit. As in Cluster API, every selected
// machine that is not healthy counts against the limit: the unhealthy ones,
// those still without a Node, and those being deleted.
func (r *Reconciler) decide(_ context.Context, s *scope) (phase.Result, error) {
	expected := len(s.verdicts)
	notHealthy := expected - s.healthy
	l, err := shortCircuit(&s.check.Spec, expected, notHealthy)
	if err != nil {
		r.refuse(s, err)
		return phase.Result{Stop: true}, nil
	}
	s.limit = l
	if !l.allowed {
		msg := fmt.Sprintf("Remediation is not allowed: %d of %d machines are unhealthy or have no node, beyond %s",
			notHealthy, expected, l.describe)
		if setCondition(s.check, metav1.ConditionFalse, machinaio.ReasonTooManyUnhealthy, msg) {
			r.Recorder.Eventf(s.check, nil, corev1.EventTypeWarning, ReasonRemediationRestricted, "Remediate", "%s", msg)
		}
		return phase.Result{Stop: true}, nil
	}
	if until := r.holdUntil(s.now); until > 0 {
		setCondition(s.check, metav1.ConditionFalse, machinaio.ReasonFrozen,
			"Remediation waits: the API servers are or were just unreachable ("+r.Gate.Reason()+")")
		return phase.Result{RequeueAfter: until, Stop: true}, nil
	}
	setCondition(s.check, metav1.ConditionTrue, machinaio.ReasonWithinLimit,
		fmt.Sprintf("%d of %d machines are unhealthy or have no node, within %s", notHealthy, expected, l.describe))
	return phase.Result{}, nil
}

// holdUntil is how long the safety gate holds health decisions from now
// (0: it does not).
func (r *Reconciler) holdUntil(now time.Time) time.Duration {
	if !r.Gate.HoldsTimeouts(now) {
		return 0
	}
	if r.Gate.Frozen() {
		return freeze.Recheck
	}
	return max(r.Gate.GraceUntil().Sub(now), time.Second)
}

// remediate deletes the unhealthy machines a MachineSet controls, or,
// with a remediation template, asks for their external remediation.
func (r *Reconciler) remediate(ctx context.Context, s *scope) (phase.Result, error) {
	if s.check.Spec.RemediationTemplate != nil {
		return r.remediateExternally(ctx, s)
	}
	log := ctrl.LoggerFrom(ctx)
	for _, v := range s.verdicts {
		m := v.machine
		switch {
		case v.unhealthy == "":
			continue
		case m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed:
			// Its MachineSet replaces (or preserves) a Failed machine already.
			continue
		case !ownedByMachineSet(m):
			r.Recorder.Eventf(m, s.check, corev1.EventTypeWarning, ReasonRemediationNotSupported, "Remediate",
				"Machine is unhealthy (%s) but not remediated by MachineHealthCheck %s: no MachineSet controls it, so nothing would replace it",
				v.unhealthy, s.check.Name)
			continue
		}
		err := r.Control.Delete(ctx, m, client.Preconditions{UID: &m.UID})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			continue // gone or replaced meanwhile
		}
		if err != nil {
			return phase.Result{}, fmt.Errorf("deleting unhealthy machine %s: %w", m.Name, err)
		}
		log.Info("Remediated an unhealthy machine", "machine", m.Name, "reason", v.unhealthy)
		r.Recorder.Eventf(s.check, m, corev1.EventTypeNormal, ReasonRemediated, "Remediate",
			"Deleted machine %s, its MachineSet replaces it: %s", m.Name, v.unhealthy)
	}
	return phase.Result{}, nil
}

// refuse reports a spec the check cannot act on: nothing is remediated.
func (r *Reconciler) refuse(s *scope, err error) {
	if setCondition(s.check, metav1.ConditionFalse, machinaio.ReasonInvalidSpec, err.Error()) {
		r.Recorder.Eventf(s.check, nil, corev1.EventTypeWarning, ReasonInvalidSpec, "Remediate", "%s; nothing is remediated", err)
	}
}

// setCondition sets RemediationAllowed and tells whether its status,
// reason or message changed.
func setCondition(check *machinaio.MachineHealthCheck, status metav1.ConditionStatus, reason, msg string) bool {
	old := meta.FindStatusCondition(check.Status.Conditions, machinaio.RemediationAllowedCondition)
	changed := old == nil || old.Status != status || old.Reason != reason || old.Message != msg
	meta.SetStatusCondition(&check.Status.Conditions, metav1.Condition{
		Type: machinaio.RemediationAllowedCondition, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: check.Generation,
	})
	return changed
}

// writeStatus writes the counts and the condition, once, when they changed.
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	st := &s.check.Status
	st.ExpectedMachines = int32(len(s.verdicts))
	st.CurrentHealthy = int32(s.healthy)
	st.RemediationsAllowed = int32(s.limit.remaining)
	st.ObservedGeneration = s.check.Generation
	if err := s.patcher.Patch(ctx, s.check); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("writing the status of MachineHealthCheck %s: %w", s.check.Name, err))
	}
	return nil
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
