package machinedeployment

import (
	"context"

	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/freeze"
)

// holdWhileFrozen is the phase that stops the sync while the API server
// freeze holds: what the cache shows may be stale, so no set is scaled,
// created or deleted and no node is marked; the counts are still reported.
// The gate's source syncs the deployment again when it opens; until then it
// is looked at again every freeze.Recheck.
func (r *Reconciler) holdWhileFrozen(_ context.Context, s *scope) (phase.Result, error) {
	if !r.Gate.Frozen() {
		return phase.Result{}, nil
	}
	s.log.V(1).Info("API server freeze: not scaling machine sets", "reason", r.Gate.Reason())
	s.d.Status = calculateStatus(s.d, s.all(), s.new, s.now)
	return phase.Result{RequeueAfter: freeze.Recheck, Stop: true, NoResync: true}, nil
}
