package machine

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// hookPoint is one of the two points of the deletion flow where Cluster
// API's lifecycle hooks hold a machine.
type hookPoint struct {
	prefix    string // the annotation family
	condition string // the condition that tells the wait
	what      string // for humans: "pre-drain"
	step      v1alpha1.DeletionStep
	next      v1alpha1.DeletionStep
}

var (
	preDrainHooks = hookPoint{
		prefix:    v1alpha1.PreDrainDeleteHookAnnotationPrefix,
		condition: v1alpha1.MachineConditionPreDrainDeleteHookSucceeded,
		what:      "pre-drain",
		step:      v1alpha1.DeletionStepPreDrainHook,
		next:      v1alpha1.DeletionStepDrain,
	}
	preTerminateHooks = hookPoint{
		prefix:    v1alpha1.PreTerminateDeleteHookAnnotationPrefix,
		condition: v1alpha1.MachineConditionPreTerminateDeleteHookSucceeded,
		what:      "pre-terminate",
		step:      v1alpha1.DeletionStepPreTerminateHook,
		next:      v1alpha1.DeletionStepDeleteVM,
	}
)

// Reasons of the hook conditions, Cluster API's.
const (
	reasonWaitingExternalHook = "WaitingExternalHook"
	reasonHooksRemoved        = "HooksRemoved"
)

// waitForHooks holds the deletion at point p while the machine has hooks
// of its family. The Machine watch sees an annotation removed, so nothing
// polls. The hold is told in the condition, status.lastOperation and one
// event per change of the set of hooks; force deletion does not skip it
// (a hook guards something outside machina, as in Cluster API).
func (r *Reconciler) waitForHooks(s *scope, p hookPoint) (v1alpha1.DeletionStep, phase.Result, error) {
	names := v1alpha1.HookNames(s.machine.Annotations, p.prefix)
	held := meta.FindStatusCondition(s.machine.Status.MachineConditions, p.condition)
	if len(names) == 0 {
		if held != nil && held.Status == metav1.ConditionFalse {
			setHookCondition(s, p, metav1.ConditionTrue, reasonHooksRemoved,
				fmt.Sprintf("The %s hooks were removed", p.what))
			setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "",
				fmt.Sprintf("The %s hooks were removed; continuing the deletion", p.what))
		}
		return p.next, phase.Result{}, nil
	}
	msg := fmt.Sprintf("Waiting for %s hooks to be removed: %s (annotations %s/<name>)",
		p.what, strings.Join(names, ", "), p.prefix)
	if held == nil || held.Message != msg {
		r.normal(s, reasonWaitingExternalHook, actionDelete, "%s", msg)
	}
	setHookCondition(s, p, metav1.ConditionFalse, reasonWaitingExternalHook, msg)
	setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "", msg)
	return p.step, phase.Result{}, nil
}

// setHookCondition sets the condition of point p; its transition time is
// kept while the status stays (meta.SetStatusCondition), so the True
// condition's time is when the hooks were removed.
func setHookCondition(s *scope, p hookPoint, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.machine.Status.MachineConditions, metav1.Condition{
		Type:               p.condition,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: s.machine.Generation,
		LastTransitionTime: metav1.NewTime(s.now),
	})
}
