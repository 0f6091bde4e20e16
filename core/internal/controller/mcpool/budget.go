package mcpool

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// budget caps n, the nodes the rollout may start now, by the pool's
// disruption budgets (spec.disruption.budgets, reason ConfigUpdate): the
// members on their way to the target count as under way. A budget that
// leaves no room is named in s.held; the pool is looked at again when a
// budget's window changes.
func (r *Reconciler) budget(s *scope, n int32) (int32, phase.Result) {
	d := s.pool.Spec.Disruption
	if d == nil || len(d.Budgets) == 0 || n == 0 {
		return n, phase.Result{}
	}
	// checkBudgets refused unreadable budgets before the rollout.
	l := disruption.AllowOrHold(d.Budgets, v1alpha1.DisruptionReasonConfigUpdate, int32(len(s.members)), s.now)
	var res phase.Result
	if !l.Next.IsZero() {
		res.RequeueAfter = max(l.Next.Sub(s.now), time.Second)
	}
	if !l.Limited {
		return n, res
	}
	var underway int32
	for _, m := range s.members {
		if m.desired == s.target && !m.updated(s.target) {
			underway++
		}
	}
	room, why := l.Room(underway, "node(s) updating")
	if why != "" {
		s.held = append(s.held, why)
		r.Recorder.Eventf(s.pool, nil, corev1.EventTypeNormal, ReasonDisruptionHeld, "Update", "Not updating more nodes now: %s", why)
	}
	return min(n, room), res
}

// checkBudgets refuses a pool whose budgets cannot be read, as an
// out-of-range maxUnavailable is refused: the pool is Degraded naming the
// field, and no node starts.
func checkBudgets(s *scope) {
	if d := s.pool.Spec.Disruption; d != nil {
		if err := disruption.Validate(d.Budgets); err != nil {
			s.invalid = err.Error()
		}
	}
}
