package machinedeployment

import (
	"context"

	"github.com/machina-io/machina/core/disruption"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// rollout is the last phase: one step of the rollout of the deployment's
// strategy (strategy.go), then the rollout's status: the counts, the
// Progressing and ReplicaFailure conditions, and when to look again for a
// missed progress deadline. The status is computed even when the step
// failed, so that it reports what the step got done.
func (r *Reconciler) rollout(ctx context.Context, s *scope) (phase.Result, error) {
	// validate let only deployments with a known strategy get here.
	st, _ := strategyOf(s.d)
	var err error
	if _, inPlace := st.(inPlaceUpdate); !inPlace {
		// A set an in-place rollout kept from scaling up scales again once
		// the deployment rolls otherwise.
		err = r.clearScaleUpDisabled(ctx, s)
	}
	if err == nil {
		err = st.rollout(ctx, r, s)
	}
	status, recheck := rolloutStatus(s.d, s.all(), s.new, s.now)
	s.d.Status = status
	if a, ok := st.(statusAdjuster); ok {
		a.afterStatus(r, s)
	}
	res := phase.Result{RequeueAfter: recheck}
	if s.retryNodes {
		res = res.Merge(phase.Result{RequeueAfter: nodeConflictRetry})
	}
	if s.inPlace != nil && len(s.inPlace.held) > 0 {
		res = res.Merge(phase.Result{RequeueAfter: disruption.Recheck})
	}
	noteBudget(s)
	res = res.Merge(budgetRequeue(s))
	return res, err
}
