package machineset

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// computeStatus is the last phase: the status from the machines the set
// controls after this sync's deletions, and this sync's create and delete
// error (statusOf). The set is synced again when a ready machine becomes
// available, else after the resync period; the create or delete error is
// returned after the status is written.
func (r *Reconciler) computeStatus(_ context.Context, s *scope) (phase.Result, error) {
	st, untilAvailable := statusOf(s.ms, without(s.machines, s.plan.deletions()), s.manageErr, time.Now())
	s.status = &st
	return phase.Result{RequeueAfter: nextSync(untilAvailable, r.Options.withDefaults().ResyncPeriod)}, s.manageErr
}

// nextSync is when to sync the set again without an event: when a ready
// machine becomes available, else after the resync period.
func nextSync(untilAvailable, resync time.Duration) time.Duration {
	if untilAvailable > 0 && untilAvailable < resync {
		// A little slack so that the machine is surely past its minReadySeconds.
		return untilAvailable + 100*time.Millisecond
	}
	return resync
}

// statusOf derives the set's status from the machines it controls (those
// deleted in this sync already left out) and the error of this sync's
// creates and deletes. It also returns how long until a ready machine becomes
// available, so that the set is synced again then (0: nothing pending).
func statusOf(ms *v1alpha1.MachineSet, machines []*v1alpha1.Machine, manageErr error, now time.Time) (v1alpha1.MachineSetStatus, time.Duration) {
	st := *ms.Status.DeepCopy()
	templateLabels := labels.SelectorFromSet(ms.Spec.Template.Labels)

	var replicas, fullyLabeled, ready, available, preservedFailed, autoPreserved int32
	var failed []v1alpha1.MachineSummary
	var nextAvailable time.Duration
	for _, m := range machines {
		if isTerminating(m) {
			continue
		}
		if m.Annotations[v1alpha1.PreserveAnnotation] == v1alpha1.PreserveValueAutoPreserved {
			autoPreserved++
		}
		if isFailed(m) && isPreserved(m, now) {
			// Kept on purpose and replaced meanwhile (computePlan): not a
			// replica, and not among the failed machines (as MCM).
			preservedFailed++
			continue
		}
		replicas++
		if templateLabels.Matches(labels.Set(m.Labels)) {
			fullyLabeled++
		}
		if isReady(m) {
			ready++
		}
		ok, wait := availableAt(m, ms.Spec.MinReadySeconds, now)
		if ok {
			available++
		} else if wait > 0 && (nextAvailable == 0 || wait < nextAvailable) {
			nextAvailable = wait
		}
		if m.Status.LastOperation.State == v1alpha1.MachineStateFailed {
			summary := v1alpha1.MachineSummary{
				Name:          m.Name,
				ProviderID:    m.Spec.ProviderID,
				LastOperation: m.Status.LastOperation,
			}
			if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
				summary.OwnerRef = ref.Name
			}
			failed = append(failed, summary)
		}
	}

	st.Replicas = replicas
	st.FullyLabeledReplicas = fullyLabeled
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	st.PreservedFailedReplicas = preservedFailed
	if autoPreserved > 0 || ms.Spec.AutoPreserveFailedMachineMax != nil {
		st.AutoPreserveFailedMachineCount = &autoPreserved
	} else {
		st.AutoPreserveFailedMachineCount = nil
	}
	st.ObservedGeneration = ms.Generation
	if len(failed) > 0 {
		st.FailedMachines = &failed
	} else {
		st.FailedMachines = nil
	}
	if sel, err := metav1.LabelSelectorAsSelector(ms.Spec.Selector); err == nil {
		st.LabelSelector = sel.String()
	}
	setReplicaFailure(&st, manageErr, now)
	return st, nextAvailable
}

// setReplicaFailure sets the ReplicaFailure condition while creates or
// deletes fail, and removes it once a sync succeeds.
func setReplicaFailure(st *v1alpha1.MachineSetStatus, manageErr error, now time.Time) {
	if manageErr == nil {
		removeCondition(st, v1alpha1.MachineSetReplicaFailure)
		return
	}
	reason := "FailedDelete"
	var ce errCreate
	if errors.As(manageErr, &ce) {
		reason = "FailedCreate"
	}
	setCondition(st, v1alpha1.MachineSetCondition{
		Type:    v1alpha1.MachineSetReplicaFailure,
		Status:  v1alpha1.ConditionTrue,
		Reason:  reason,
		Message: manageErr.Error(),
	}, now)
}

// setCondition adds or replaces a condition; lastTransitionTime moves only
// when the status changes, so an unchanged condition causes no write.
func setCondition(st *v1alpha1.MachineSetStatus, c v1alpha1.MachineSetCondition, now time.Time) {
	for i := range st.Conditions {
		cur := &st.Conditions[i]
		if cur.Type != c.Type {
			continue
		}
		if cur.Status == c.Status {
			c.LastTransitionTime = cur.LastTransitionTime
		} else {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		*cur = c
		return
	}
	c.LastTransitionTime = metav1.NewTime(now)
	st.Conditions = append(st.Conditions, c)
}

func removeCondition(st *v1alpha1.MachineSetStatus, t v1alpha1.MachineSetConditionType) {
	out := st.Conditions[:0:0]
	for _, c := range st.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		out = nil
	}
	st.Conditions = out
}

// writeStatus is the one write at the end of a sync: the status the phases
// computed, if any, through the scope's patcher (only if it differs from
// the stored one).
func (r *Reconciler) writeStatus(ctx context.Context, s *scope) error {
	if s.status == nil {
		return nil
	}
	s.ms.Status = *s.status
	if err := s.patcher.Patch(ctx, s.ms); err != nil {
		return fmt.Errorf("updating status of machine set %s: %w", s.ms.Name, err)
	}
	return nil
}
