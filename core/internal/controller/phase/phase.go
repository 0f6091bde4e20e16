// Package phase runs a reconcile as a list of named phases over a scope:
// the shape of the Machine, MachineSet and MachineDeployment controllers.
// A reconcile gathers what it read into a scope, runs the phases in order,
// and writes the object once at the end; each phase is a small function that reads and
// changes the scope and says whether the phases after it run.
package phase

import (
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Result is what a phase asks of the reconcile.
type Result struct {
	// RequeueAfter asks for the next reconcile after this long (0: none
	// before the controller's resync period).
	RequeueAfter time.Duration
	// Stop ends the run: the phases after this one do not run.
	Stop bool
	// NoResync makes RequeueAfter the only requeue, instead of the earlier
	// of it and the resync period (0 then means none at all): for an object
	// that only a change of its own, or the event awaited, brings back.
	NoResync bool
}

// Merge keeps the earliest requeue of two results, and their stops.
func (a Result) Merge(b Result) Result {
	out := Result{Stop: a.Stop || b.Stop, NoResync: a.NoResync || b.NoResync, RequeueAfter: a.RequeueAfter}
	if b.RequeueAfter > 0 && (out.RequeueAfter == 0 || b.RequeueAfter < out.RequeueAfter) {
		out.RequeueAfter = b.RequeueAfter
	}
	return out
}

// Requeue is the controller's result for a run whose object is otherwise
// synced again every resync: the earlier of the two, or RequeueAfter alone
// with NoResync.
func (a Result) Requeue(resync time.Duration) ctrl.Result {
	if a.NoResync || (a.RequeueAfter > 0 && a.RequeueAfter < resync) {
		return ctrl.Result{RequeueAfter: a.RequeueAfter}
	}
	return ctrl.Result{RequeueAfter: resync}
}

// Func is one phase of a reconcile over a scope S.
type Func[S any] func(ctx context.Context, s S) (Result, error)

// Run runs the phases in order until one fails or stops the run, and
// returns their merged result.
func Run[S any](ctx context.Context, s S, phases ...Func[S]) (Result, error) {
	var res Result
	for _, p := range phases {
		pr, err := p(ctx, s)
		res = res.Merge(pr)
		if err != nil || pr.Stop {
			return res, err
		}
	}
	return res, nil
}
