package machinedeployment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// rollback is the phase of the deprecated spec.rollbackTo: it copies the
// template of the machine set with the requested revision (0: the one before
// the current) into the deployment and clears rollbackTo, in one update, and
// ends the sync without a status write (the update syncs the deployment
// again). The rollout to that template then proceeds as for any template
// change. A revision that does not exist, or is the current template
// already, only clears rollbackTo, with an event.
func (r *Reconciler) rollback(ctx context.Context, s *scope) (phase.Result, error) {
	d := s.d
	if d.Spec.RollbackTo == nil {
		return phase.Result{}, nil
	}
	want := d.Spec.RollbackTo.Revision
	if want == 0 {
		want = previousRevision(s.sets)
	}
	var target *v1alpha1.MachineSet
	for _, ms := range s.sets {
		if want != 0 && revisionOf(ms) == want {
			target = ms
		}
	}

	orig := d.DeepCopy()
	d.Spec.RollbackTo = nil
	switch {
	case target == nil:
		r.Recorder.Eventf(d, nil, corev1.EventTypeWarning, "DeploymentRollbackRevisionNotFound", "Rollback", "Unable to find the revision to roll back to")
	case sameRollingTemplate(&target.Spec.Template, &d.Spec.Template):
		r.Recorder.Eventf(d, target, corev1.EventTypeWarning, "DeploymentRollbackTemplateUnchanged", "Rollback", "The rollback revision contains the same template as the current one")
	default:
		tmpl := target.Spec.Template.DeepCopy()
		delete(tmpl.Labels, v1alpha1.DefaultMachineDeploymentUniqueLabelKey)
		d.Spec.Template = *tmpl
		r.Recorder.Eventf(d, target, corev1.EventTypeNormal, "DeploymentRollback", "Rollback", "Rolled back to revision %d", want)
		s.log.Info("Rolling back", "revision", want, "machineSet", target.Name)
	}
	// The whole object is written: rollbackTo must go in the same write as the
	// template, and the optimistic lock keeps a concurrent edit from being lost.
	if err := r.Client.Patch(ctx, d, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return phase.Result{Stop: true}, fmt.Errorf("rolling back: %w", err)
	}
	s.skipStatus = true
	return phase.Result{Stop: true}, nil
}

// previousRevision is the highest revision below the highest one, 0 if none.
func previousRevision(sets []*v1alpha1.MachineSet) int64 {
	var top, prev int64
	for _, ms := range sets {
		switch v := revisionOf(ms); {
		case v > top:
			prev, top = top, v
		case v > prev && v < top:
			prev = v
		}
	}
	return prev
}
