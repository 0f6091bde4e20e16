package machinedeployment

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
)

// ReasonDisruptionBudget (event, and the end of the Progressing message):
// a disruption budget (spec.disruption.budgets) holds a rollout, an
// in-place update, an expiry or a drift replacement back; the message names
// the budget and when its window changes.
const ReasonDisruptionBudget = "DisruptionBudget"

// ReasonInvalidDisruptionBudget (Progressing, False): a budget cannot be
// read (a bad schedule, a schedule without duration, a bad count); the
// deployment is neither scaled nor rolled until it is fixed.
const ReasonInvalidDisruptionBudget = "InvalidDisruptionBudget"

// room is how many more machines the deployment may disrupt now for reason,
// given the disrupting ones already under way, and whether a budget limits
// it at all. A budget that holds the disruption back is recorded in the
// scope (for the status, an event, and a look again when its window
// changes).
func (r *Reconciler) room(s *scope, reason v1alpha1.DisruptionReason, underway int32) (int32, bool) {
	var budgets []v1alpha1.DisruptionBudget
	if s.d.Spec.Disruption != nil {
		budgets = s.d.Spec.Disruption.Budgets
	}
	if len(budgets) == 0 {
		return 0, false
	}
	// validate refused unreadable budgets.
	l := disruption.AllowOrHold(budgets, reason, s.d.Spec.Replicas, s.now)
	if !l.Next.IsZero() && (s.budgetRecheck.IsZero() || l.Next.Before(s.budgetRecheck)) {
		s.budgetRecheck = l.Next
	}
	if !l.Limited {
		return 0, false
	}
	room, why := l.Room(underway, "machine(s) disrupted")
	if why != "" {
		msg := fmt.Sprintf("%s waits: %s", reason, why)
		s.budgetHeld = msg
		r.Recorder.Eventf(s.d, nil, corev1.EventTypeNormal, ReasonDisruptionBudget, "Disrupt", "%s", msg)
	}
	return room, true
}

// terminatingOld counts the old sets' machines being deleted: the rollout's
// disruptions under way.
func (s *scope) terminatingOld() int32 {
	var n int32
	for _, ms := range s.old {
		for _, m := range s.machines[ms.UID] {
			if m.DeletionTimestamp != nil {
				n++
			}
		}
	}
	return n
}

// noteBudget ends the Progressing message with what a budget held back in
// this sync, or drops that part when nothing was.
func noteBudget(s *scope) {
	c := getCondition(&s.d.Status, v1alpha1.MachineDeploymentProgressing)
	if c == nil {
		return
	}
	// The budget's part ends the message, after the in-place counts; a part
	// of an earlier sync may stand before them.
	msg := c.Message
	if i := strings.Index(msg, disruption.MessagePrefix); i >= 0 {
		rest := msg[i+len(disruption.MessagePrefix):]
		if j := strings.Index(rest, inPlaceMessagePrefix); j >= 0 {
			msg = msg[:i] + rest[j:]
		} else {
			msg = msg[:i]
		}
	}
	if s.budgetHeld != "" {
		msg += disruption.MessagePrefix + s.budgetHeld + "."
	}
	if msg != c.Message {
		c.Message = msg
		c.LastUpdateTime = metav1.NewTime(s.now)
	}
}
