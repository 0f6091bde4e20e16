package machine

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The condition and event reason of an expireAfter nothing acts on.
const (
	// conditionExpiryHonoured is False, with reason ExpireAfterIgnored,
	// while a Machine that no MachineSet controls has spec.expireAfter:
	// expiry is its MachineDeployment's (under its maxUnavailable), so a
	// bare machine never expires. Removed when either changes.
	conditionExpiryHonoured  = "ExpiryHonoured"
	reasonExpireAfterIgnored = "ExpireAfterIgnored"
)

// reportIgnoredExpiry says on a bare Machine that its expireAfter is not
// acted on: a field accepted and skipped would otherwise look honoured.
func (r *Reconciler) reportIgnoredExpiry(s *scope) {
	conds := &s.machine.Status.MachineConditions
	cfg := s.machine.Spec.MachineConfiguration
	ignored := cfg != nil && cfg.MachineExpireAfter != nil && cfg.MachineExpireAfter.Duration > 0 &&
		metav1.GetControllerOf(s.machine) == nil
	if !ignored {
		meta.RemoveStatusCondition(conds, conditionExpiryHonoured)
		return
	}
	const msg = "spec.expireAfter is acted on only for machines of a MachineDeployment; this machine does not expire"
	if meta.FindStatusCondition(*conds, conditionExpiryHonoured) == nil {
		r.warning(s, reasonExpireAfterIgnored, actionSync, "%s", msg)
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               conditionExpiryHonoured,
		Status:             metav1.ConditionFalse,
		Reason:             reasonExpireAfterIgnored,
		Message:            msg,
		ObservedGeneration: s.machine.Generation,
		LastTransitionTime: metav1.NewTime(s.now),
	})
}
