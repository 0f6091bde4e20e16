package machine

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/drain"
)

const (
	reasonMisconfiguredPDB  = "MisconfiguredPDB"
	reasonEvictionsRetried  = "EvictionRetriesExhausted"
	conditionMisconfigured  = "MisconfiguredPDB"
	conditionRetriesExhaust = "EvictionRetriesExhausted"
)

// DefaultEvictRetryInterval is how often MCM retries a refused eviction
// (machine-controller-manager pkg/util/provider/drain, PodEvictionRetryInterval);
// --machine-max-evict-retries counts retries of this length.
const DefaultEvictRetryInterval = 20 * time.Second

// DefaultMaxEvictRetries is MCM's default: the default drain timeout (2h)
// in retries of DefaultEvictRetryInterval.
const DefaultMaxEvictRetries = 360

// maxEvictRetries is spec.maxEvictRetries of the machine, else
// --machine-max-evict-retries.
func (r *Reconciler) maxEvictRetries(s *scope) int32 {
	if n := s.config().MaxEvictRetries; n != nil && *n > 0 {
		return *n
	}
	return r.Options.MaxEvictRetries
}

// drainBlocked handles a graceful pass that PodDisruptionBudgets held up,
// as MCM's drain does:
//   - a budget that can never allow the eviction (drain.Result.Misconfigured)
//     fails the drain at once: lastOperation Failed, the Drained condition
//     with reason MisconfiguredPDB, a Warning event, and the next look after
//     MediumRetry rather than at every poll, since only an operator can
//     change the answer; the drain timeout still forces the drain;
//   - an eviction refused for longer than maxEvictRetries retries of
//     DefaultEvictRetryInterval (MCM's effective limit, never beyond the
//     drain timeout) fails the drain: lastOperation Failed and a Warning
//     event once, while the passes go on (MCM starts a new drain with fresh
//     retries) until the budget allows it or the drain timeout forces it.
//
// handled is false when the pass was blocked by neither.
func (r *Reconciler) drainBlocked(s *scope, nodeName string, res drain.Result) (phase.Result, bool) {
	if len(res.Blocked) == 0 {
		return phase.Result{}, false
	}
	m := s.machine
	prev := m.Status.LastOperation
	if len(res.Misconfigured) > 0 {
		desc := fmt.Sprintf("Draining node %s failed: %s", nodeName, res.Summary())
		setDrainedCondition(s, metav1.ConditionFalse, conditionMisconfigured, desc)
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateFailed, "", desc)
		if prev.Description != desc {
			s.log.Info(desc)
			r.warning(s, reasonMisconfiguredPDB, actionDrain, "%s", desc)
		}
		return phase.Result{RequeueAfter: r.untilDrainTimeout(s, r.Options.MediumRetry)}, true
	}

	start := v1alpha1.DrainClockStart(m)
	if t := m.Status.DeletionStepStartTime; t != nil && m.Status.DeletionStep == v1alpha1.DeletionStepDrain {
		start = t.Time
	}
	retries := r.maxEvictRetries(s)
	budget := time.Duration(retries) * r.Options.EvictRetryInterval
	if s.now.Sub(start) < budget {
		return phase.Result{}, false
	}
	desc := fmt.Sprintf("Draining node %s failed: evictions refused for %d retries of %s (maxEvictRetries): %s",
		nodeName, retries, r.Options.EvictRetryInterval, res.Summary())
	setDrainedCondition(s, metav1.ConditionFalse, conditionRetriesExhaust, desc)
	setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateFailed, "", desc)
	// Told once: later passes only refresh the counts in the description.
	if prev.State != v1alpha1.MachineStateFailed || !strings.Contains(prev.Description, "(maxEvictRetries)") {
		s.log.Info(desc)
		r.warning(s, reasonEvictionsRetried, actionDrain, "%s", desc)
	}
	return phase.Result{RequeueAfter: r.untilDrainTimeout(s, r.Options.DrainPollInterval)}, true
}

// untilDrainTimeout is next, or less when the drain timeout (which forces
// the drain) comes sooner.
func (r *Reconciler) untilDrainTimeout(s *scope, next time.Duration) time.Duration {
	if until := v1alpha1.DrainClockStart(s.machine).Add(r.drainTimeout(s)).Sub(s.now); until > 0 && until < next {
		return until
	}
	return next
}
