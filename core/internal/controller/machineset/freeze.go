package machineset

import (
	"context"
	"time"

	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/freeze"
)

// holdWhileFrozen is the phase that stops the sync while the API server
// freeze holds: what the cache shows may be stale, so no machine is created
// or deleted; the counts are still reported. Conditions stay as they are (a
// ReplicaFailure from before the freeze is neither confirmed nor cleared).
// The set is looked at again when the gate opens, and every freeze.Recheck
// until then.
func (r *Reconciler) holdWhileFrozen(_ context.Context, s *scope) (phase.Result, error) {
	if !r.Gate.Frozen() {
		return phase.Result{}, nil
	}
	s.log.V(1).Info("API server freeze: not creating or deleting machines", "reason", r.Gate.Reason())
	st, untilAvailable := statusOf(s.ms, s.machines, nil, time.Now())
	st.Conditions = s.ms.Status.DeepCopy().Conditions
	s.status = &st
	resync := r.Options.withDefaults().ResyncPeriod
	return phase.Result{RequeueAfter: min(nextSync(untilAvailable, resync), freeze.Recheck), Stop: true, NoResync: true}, nil
}
