package machine

import (
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

// The effective timeouts of a machine: its own spec fields when set, else
// the controller's options. Every timeout is measured from a timestamp
// stored on the Machine and written by this controller on its own clock
// (status.creationObservedTime, status.deletionObservedTime,
// status.unhealthySince), so no retry or phase change extends it, and a
// skew between the controller's clock and the API server's (which sets
// metadata.creationTimestamp and deletionTimestamp) neither fires a timeout
// early nor holds it off.

// Event reason and machine condition of a duration that cannot be used.
const (
	reasonInvalidDuration = "InvalidDuration"
	// conditionDurationsValid is False, with reason InvalidDuration and the
	// fields in its message, while a duration of the spec cannot be used;
	// removed once they all can.
	conditionDurationsValid = "DurationsValid"
)

// clockNow is the controller's current time: Options.Clock's, or the
// system's.
func (r *Reconciler) clockNow() time.Time {
	if r.Options.Clock != nil {
		return r.Options.Clock.Now()
	}
	return time.Now()
}

// observeTimeoutStarts records, on the controller's clock, when it first saw
// the machine being created and being deleted: the starts of the creation
// and drain timeouts. A machine created before this field existed gets it at
// its first reconcile by this version, which can only lengthen its timeout.
func observeTimeoutStarts(s *scope) {
	st := &s.machine.Status
	now := metav1.NewTime(s.now)
	if st.CreationObservedTime == nil && s.machine.DeletionTimestamp.IsZero() && creating(st.CurrentStatus.Phase) {
		st.CreationObservedTime = &now
	}
	if st.DeletionObservedTime == nil && !s.machine.DeletionTimestamp.IsZero() {
		st.DeletionObservedTime = &now
	}
}

// creating tells whether a machine in phase p has not joined yet, so its
// creation timeout runs.
func creating(p v1alpha1.MachinePhase) bool {
	return p == "" || p == v1alpha1.MachinePending || p == v1alpha1.MachineCrashLoopBackOff
}

// refuseInvalidDurations reports a machine whose spec holds a duration the
// controller cannot use (stored before the schema refused it, or past the
// schema; v1alpha1.Duration): a Warning event and the DurationsValid
// condition naming the fields. The controller then does nothing else with
// the machine, neither creating nor deleting it, rather than guessing a
// timeout the user did not write; fixing the field resumes it.
func (r *Reconciler) refuseInvalidDurations(s *scope) bool {
	bad := s.machine.Spec.MachineConfiguration.InvalidDurations()
	conds := &s.machine.Status.MachineConditions
	if len(bad) == 0 {
		meta.RemoveStatusCondition(conds, conditionDurationsValid)
		return false
	}
	msg := "The machine cannot be acted on: spec." + strings.Join(bad, "; spec.")
	if c := meta.FindStatusCondition(*conds, conditionDurationsValid); c == nil || c.Message != msg {
		s.log.Info("Invalid duration; not acting on the machine", "fields", bad)
		r.warning(s, reasonInvalidDuration, actionSync, "%s", msg)
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               conditionDurationsValid,
		Status:             metav1.ConditionFalse,
		Reason:             reasonInvalidDuration,
		Message:            msg,
		ObservedGeneration: s.machine.Generation,
		LastTransitionTime: metav1.NewTime(s.now),
	})
	return true
}

func (r *Reconciler) creationTimeout(s *scope) time.Duration {
	if d, ok := r.effectiveCreationTimeout(s); ok {
		return d
	}
	if d := s.config().MachineCreationTimeout; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return r.Options.CreationTimeout
}

func (r *Reconciler) healthTimeout(s *scope) time.Duration {
	if d := s.config().MachineHealthTimeout; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return r.Options.HealthTimeout
}

func (r *Reconciler) drainTimeout(s *scope) time.Duration {
	if d := s.config().MachineDrainTimeout; d != nil && d.Duration >= 0 {
		return d.Duration
	}
	return r.Options.DrainTimeout
}

func (r *Reconciler) healthTimeoutDisabled(s *scope) bool {
	d := s.config().DisableHealthTimeout
	return d != nil && *d
}

// nodeConditions are the condition types that make the machine unhealthy
// when True: spec.nodeConditions (comma-separated) or --node-conditions.
func (r *Reconciler) nodeConditions(s *scope) []string {
	if c := s.config().NodeConditions; c != nil {
		var out []string
		for _, t := range strings.Split(*c, ",") {
			if t = strings.TrimSpace(t); t != "" {
				out = append(out, t)
			}
		}
		return out
	}
	return r.Options.NodeConditions
}

// creationDeadline is when a machine still being created becomes Failed:
// the creation timeout after the controller first saw it being created.
func (r *Reconciler) creationDeadline(s *scope) time.Time {
	return creationStart(s).Add(r.creationTimeout(s))
}

// creationStart is status.creationObservedTime, or now for a machine not
// yet seen (observeTimeoutStarts sets it in the same reconcile).
func creationStart(s *scope) time.Time {
	if t := s.machine.Status.CreationObservedTime; t != nil {
		return t.Time
	}
	return s.now
}

// deletionStart is when the controller first saw the machine's deletion
// (status.deletionObservedTime), or now when it has not recorded it yet.
// The drain timeout runs from it (v1alpha1.DrainClockStart).
func deletionStart(s *scope) time.Time {
	if t := s.machine.Status.DeletionObservedTime; t != nil {
		return t.Time
	}
	return s.now
}

// creationTimedOut tells whether the creation timeout has passed.
func (r *Reconciler) creationTimedOut(s *scope) bool {
	return !s.now.Before(r.creationDeadline(s))
}
