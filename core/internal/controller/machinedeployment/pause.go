package machinedeployment

import (
	"context"
	"time"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// recordPause is the phase that records pausing and resuming in the
// Progressing condition (checkPausedConditions).
func (r *Reconciler) recordPause(_ context.Context, s *scope) (phase.Result, error) {
	checkPausedConditions(s.d, s.now)
	return phase.Result{}, nil
}

// scalePaused is the phase of a paused deployment: it still follows
// scaling, proportionally, and cleans up its history, but does not roll.
// It ends the sync.
func (r *Reconciler) scalePaused(ctx context.Context, s *scope) (phase.Result, error) {
	if !s.d.Spec.Paused {
		return phase.Result{}, nil
	}
	return phase.Result{Stop: true}, r.scaleOnly(ctx, s, true)
}

// checkPausedConditions records pausing and resuming in the Progressing
// condition (status Unknown), so that the time spent paused does not count
// against the progress deadline. A reported deadline miss is kept.
func checkPausedConditions(d *v1alpha1.MachineDeployment, now time.Time) {
	c := getCondition(&d.Status, v1alpha1.MachineDeploymentProgressing)
	if c != nil && c.Reason == ReasonProgressDeadlineExceeded {
		return
	}
	pausedCond := c != nil && c.Reason == ReasonDeploymentPaused
	switch {
	case d.Spec.Paused && !pausedCond:
		setCondition(&d.Status, newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionUnknown,
			ReasonDeploymentPaused, "Deployment is paused", now))
	case !d.Spec.Paused && pausedCond:
		setCondition(&d.Status, newCondition(v1alpha1.MachineDeploymentProgressing, v1alpha1.ConditionUnknown,
			ReasonDeploymentResumed, "Deployment is resumed", now))
	}
}
