package disruption

import (
	"fmt"
	"slices"
	"time"

	"github.com/robfig/cron/v3"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/intorpercent"
)

// Limit is what a deployment's disruption budgets allow for one reason at
// one time.
type Limit struct {
	// Limited is false when no active budget names the reason: nothing
	// more than the strategy's own bounds applies.
	Limited bool
	// Machines is how many machines may be disrupted at once (Limited).
	Machines int32
	// Why names the budget that sets Machines, for events and conditions.
	Why string
	// Next is when a budget's window opens or closes next (zero without
	// scheduled budgets): the limit may change then, so the caller looks
	// again.
	Next time.Time
}

// Allow returns how many of replicas machines budgets let be disrupted at
// once for reason at now: the smallest of the active budgets that name it
// (every budget without reasons names them all). A budget without a
// schedule is always active; one with a schedule from each start of its
// cron schedule (UTC) for its duration. Percentages are of replicas,
// rounded up (Karpenter's rule).
func Allow(budgets []v1alpha1.DisruptionBudget, reason v1alpha1.DisruptionReason, replicas int32, now time.Time) (Limit, error) {
	var l Limit
	now = now.UTC()
	for i, b := range budgets {
		if len(b.Reasons) > 0 && !slices.Contains(b.Reasons, reason) {
			continue
		}
		active, next, err := window(b, now)
		if err != nil {
			return Limit{}, fmt.Errorf("spec.disruption.budgets[%d]: %w", i, err)
		}
		if !next.IsZero() && (l.Next.IsZero() || next.Before(l.Next)) {
			l.Next = next
		}
		if !active {
			continue
		}
		n, err := intorpercent.Scaled(fmt.Sprintf("spec.disruption.budgets[%d].machines", i), b.Machines, replicas, true)
		if err != nil {
			return Limit{}, err
		}
		if n < 0 {
			return Limit{}, fmt.Errorf("spec.disruption.budgets[%d].machines: %s is negative", i, b.Machines.String())
		}
		// At most replicas, so the count fits an int32.
		machines := int32(min(n, int64(replicas))) //nolint:gosec // bounded by replicas
		if !l.Limited || machines < l.Machines {
			l.Limited, l.Machines, l.Why = true, machines, describe(i, b)
		}
	}
	return l, nil
}

// AllowOrHold is Allow for callers that refused unreadable budgets before
// acting: a budget that still fails to read holds everything back (Limited,
// 0 machines, the error as Why) rather than being ignored.
func AllowOrHold(budgets []v1alpha1.DisruptionBudget, reason v1alpha1.DisruptionReason, replicas int32, now time.Time) Limit {
	l, err := Allow(budgets, reason, replicas, now)
	if err != nil {
		return Limit{Limited: true, Why: err.Error()}
	}
	return l
}

// Room is how many more may be disrupted under l with underway already
// under way (l must be Limited), and, when none may, the sentence that says
// why: "<budget> allows 1 <what> at once and 1 are; the budgets change at
// <time>", what naming the unit (e.g. "machine(s) disrupted").
func (l Limit) Room(underway int32, what string) (int32, string) {
	room := max(l.Machines-underway, 0)
	if room > 0 {
		return room, ""
	}
	msg := fmt.Sprintf("%s allows %d %s at once and %d are", l.Why, l.Machines, what, underway)
	if !l.Next.IsZero() {
		msg += fmt.Sprintf("; the budgets change at %s", l.Next.UTC().Format(time.RFC3339))
	}
	return 0, msg
}

// MessagePrefix starts the part of a MachineDeployment's Progressing
// message that says what a budget holds back; kubectl machina why reads it
// from there.
const MessagePrefix = " Disruption budget: "

// Validate checks every budget once, so that a deployment with a budget it
// cannot read is refused as a whole instead of failing at its first
// disruption.
func Validate(budgets []v1alpha1.DisruptionBudget) error {
	for _, reason := range []v1alpha1.DisruptionReason{v1alpha1.DisruptionReasonRollout, v1alpha1.DisruptionReasonInPlace,
		v1alpha1.DisruptionReasonExpired, v1alpha1.DisruptionReasonDrifted, v1alpha1.DisruptionReasonConfigUpdate} {
		if _, err := Allow(budgets, reason, 1, time.Now()); err != nil {
			return err
		}
	}
	for i, b := range budgets {
		if (b.Schedule == "") != (b.Duration == nil) {
			return fmt.Errorf("spec.disruption.budgets[%d]: schedule and duration go together", i)
		}
	}
	return nil
}

// window says whether b is active at now and when that changes next (zero
// for a budget without a schedule, always active).
func window(b v1alpha1.DisruptionBudget, now time.Time) (bool, time.Time, error) {
	if b.Schedule == "" {
		return true, time.Time{}, nil
	}
	if b.Duration == nil || b.Duration.Err() != nil || b.Duration.Duration <= 0 {
		return false, time.Time{}, fmt.Errorf("schedule %q needs a duration above 0", b.Schedule)
	}
	sched, err := cron.ParseStandard(b.Schedule)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("schedule %q: %w", b.Schedule, err)
	}
	d := b.Duration.Duration
	// The first start after now-d is the start of the window now is in, if
	// any: windows are [start, start+d).
	start := sched.Next(now.Add(-d))
	if !start.After(now) {
		return true, start.Add(d), nil
	}
	return false, start, nil
}

func describe(i int, b v1alpha1.DisruptionBudget) string {
	s := fmt.Sprintf("spec.disruption.budgets[%d] (%s machines", i, b.Machines.String())
	if b.Schedule != "" {
		s += fmt.Sprintf(", from %q for %s", b.Schedule, b.Duration.Duration)
	}
	return s + ")"
}
