package machineset

import (
	"time"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/scaledown"
)

// The scale-down order lives in core/scaledown, exported, so that
// kubectl-machina's "scale-down --dry-run" shows the order this controller
// deletes in. Its keys, in order: not preserved before preserved, lower
// machinepriority annotation, marked for deletion (earlier mark first),
// phase (Terminating < Failed < CrashLoopBackOff < Unknown < creating <
// Pending < Available < Running), newer machine, name.

// deleteFirst reports whether machine a should be deleted before machine b on
// scale-down.
func deleteFirst(a, b *v1alpha1.Machine, now time.Time) bool { return scaledown.First(a, b, now) }

// sortForDeletion sorts machines in place so that the first ones are the
// first to delete on scale-down.
func sortForDeletion(machines []*v1alpha1.Machine, now time.Time) { scaledown.Sort(machines, now) }

// pickVictims returns the count machines to delete first, without changing
// the order of the given slice.
func pickVictims(machines []*v1alpha1.Machine, count int, now time.Time) []*v1alpha1.Machine {
	return scaledown.Pick(machines, count, now)
}
