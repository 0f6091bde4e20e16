package machine

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/drain"
	"github.com/machina-io/machina/core/internal/preservation"
)

// The preservation phase keeps a machine, and its node, that would
// otherwise be replaced: for a look at a Failed node before it goes, or to
// keep a node that should stay for a while. What the preserve values mean,
// which one is in force, the Preserved condition and the preserved taint
// are core/internal/preservation's; this file carries them out, as MCM's
// manageMachinePreservation does (machine-controller-manager,
// pkg/util/provider/machinecontroller/machine.go and machine_util.go):
//
//   - Preserving stamps status.currentStatus.preserveExpiryTime (now plus
//     machinePreserveTimeout or --machine-preserve-timeout), sets the
//     cluster-autoscaler's scale-down-disabled annotation on the Node, and
//     the Preserved condition on the Node (mirrored on the Machine). The
//     Node of a Failed machine also gets the NoSchedule taint
//     node.machine.sapcloud.io/preserved and is drained, DaemonSet pods
//     staying.
//   - It stops when the value says so, when the expiry passes (the preserve
//     annotation is then removed, so that it does not start again), and when
//     a machine preserved "when-failed" or "auto-preserved" is no longer
//     Failed: a preserved Failed machine whose Node is healthy again becomes
//     Running (machine_health.go). Stopping sets Preserved=False, removes
//     the autoscaler annotation if the controller set it, the taint and the
//     expiry. A Failed machine whose preservation stopped is replaced by its
//     MachineSet as any Failed machine.
//
// While preserved, a Failed machine is not replaced and does not count
// towards its MachineSet's replicas (the set creates a machine in its
// place), is deleted last on scale-down (core/scaledown), and is not
// counted by the meltdown guard.

// Events of preservation.
const (
	reasonPreserved           = "Preserved"
	reasonPreservationStopped = "PreservationStopped"
	reasonPreserveInvalid     = "InvalidPreserveValue"
	actionPreserve            = "Preserve"
)

// preserveTimeout is how long preservation lasts: the machine's
// machinePreserveTimeout, else --machine-preserve-timeout.
func (r *Reconciler) preserveTimeout(s *scope) time.Duration {
	if d := s.config().MachinePreserveTimeout; d != nil && d.Duration > 0 {
		return d.Duration
	}
	return r.Options.PreserveTimeout
}

// reconcilePreservation is the phase that starts, keeps and stops the
// preservation of a machine that is not being deleted.
func (r *Reconciler) reconcilePreservation(ctx context.Context, s *scope) (phase.Result, error) {
	m := s.machine
	var node *corev1.Node
	if r.Target != nil && s.nodeName() != "" {
		n, err := r.loadNode(ctx, s)
		if err != nil {
			return phase.Result{}, err
		}
		node = n
	}
	pv := preservation.Effective(m, node)
	setMachineAnnotation(m, v1alpha1.LastAppliedNodePreserveValueAnnotation, pv.LastApplied)
	if pv.FromNode && pv.Value != "" {
		// The Node's value is in force: a value left on the Machine would
		// take over again once the Node's is removed.
		setMachineAnnotation(m, v1alpha1.PreserveAnnotation, "")
	}

	if pv.Value == "" || pv.Value == v1alpha1.PreserveValueFalse {
		return r.stopPreservation(ctx, s, node, false, false)
	}
	if !preservation.Valid(pv.Value) {
		where := "machine " + m.Name
		if pv.FromNode {
			where = "node " + node.Name
		}
		msg := fmt.Sprintf("Ignoring the preserve value %q on %s: want %q, %q or %q", pv.Value, where,
			v1alpha1.PreserveValueNow, v1alpha1.PreserveValueWhenFailed, v1alpha1.PreserveValueFalse)
		s.log.Info(msg)
		r.warning(s, reasonPreserveInvalid, actionPreserve, "%s", msg)
		return phase.Result{}, nil
	}
	if exp := m.Status.CurrentStatus.PreserveExpiryTime; exp != nil && !exp.After(s.now) {
		return r.stopPreservation(ctx, s, node, true, pv.FromNode)
	}
	failed := m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed
	if pv.Value != v1alpha1.PreserveValueNow && !failed {
		res, err := r.stopPreservation(ctx, s, node, false, false)
		if pv.Value == v1alpha1.PreserveValueAutoPreserved {
			// The MachineSet decides again, with the count of that time, if
			// the machine fails again.
			setMachineAnnotation(m, v1alpha1.PreserveAnnotation, "")
		}
		return res, err
	}
	return r.preserve(ctx, s, node, pv, failed)
}

// preserve starts or keeps the preservation of the machine.
func (r *Reconciler) preserve(ctx context.Context, s *scope, node *corev1.Node, pv preservation.Value, failed bool) (phase.Result, error) {
	m := s.machine
	cs := &m.Status.CurrentStatus
	if cs.PreserveExpiryTime == nil {
		t := metav1.NewTime(s.now.Add(r.preserveTimeout(s)).Truncate(time.Second))
		cs.PreserveExpiryTime = &t
		source := "machine"
		if pv.FromNode {
			source = "node"
		}
		r.normal(s, reasonPreserved, actionPreserve, "Machine preserved until %s (%s=%s on the %s)",
			t.UTC().Format(time.RFC3339), v1alpha1.PreserveAnnotation, pv.Value, source)
	}
	expiry := cs.PreserveExpiryTime.Time
	reason := v1alpha1.PreservedByUserMessage
	if pv.Value == v1alpha1.PreserveValueAutoPreserved {
		reason = v1alpha1.PreservedByMCMMessage
	}
	until := fmt.Sprintf("Machine preserved until %s.", expiry.UTC().Format(time.RFC3339))
	res := phase.Result{RequeueAfter: expiry.Sub(s.now)}

	if node == nil {
		preservation.SetCondition(&m.Status.Conditions, corev1.ConditionTrue, reason, until, s.now)
		return res, nil
	}

	updated := node.DeepCopy()
	if updated.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation] != "true" {
		setNodeAnnotation(updated, v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation, "true")
		setNodeAnnotation(updated, v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation, "true")
	}
	if failed {
		preservation.AddTaint(updated)
	} else {
		// A machine preserved "now" that is (again) serving takes pods.
		preservation.RemoveTaint(updated)
	}
	if err := r.patchNode(ctx, s, node, updated); err != nil {
		return phase.Result{}, err
	}

	status, message := corev1.ConditionTrue, until
	if failed {
		cond := preservation.Condition(s.node.Status.Conditions)
		drained := cond != nil && cond.Status == corev1.ConditionTrue && strings.HasPrefix(cond.Message, v1alpha1.PreservedNodeDrainSuccessfulMessage)
		if drained {
			message = cond.Message
		} else {
			var wait time.Duration
			status, message, wait = r.drainPreserved(ctx, s, until)
			if wait > 0 && wait < res.RequeueAfter {
				res.RequeueAfter = wait
			}
		}
	}
	if err := r.setNodePreservedCondition(ctx, s, status, reason, message); err != nil {
		return phase.Result{}, err
	}
	return res, nil
}

// drainPreserved runs one drain pass over the Node of a preserved Failed
// machine, without cordoning it (the taint keeps new pods off). The drain
// is forced once the drain timeout has passed since the machine failed, or
// when the Node has been unreachable for Options.UnreachableThreshold. It
// returns the Preserved condition's status and message, and how soon to
// look again while pods remain.
func (r *Reconciler) drainPreserved(ctx context.Context, s *scope, until string) (corev1.ConditionStatus, string, time.Duration) {
	node := s.node
	failedAt := s.machine.Status.CurrentStatus.LastUpdateTime.Time
	force := false
	if !s.now.Before(failedAt.Add(r.drainTimeout(s))) {
		force = true
	} else if _, unreachable := drain.Unreachable(node, s.now, r.Options.UnreachableThreshold); unreachable {
		force = true
	}
	res, err := r.drainPass(ctx, s, node.Name, force, true)
	if err != nil {
		msg := fmt.Sprintf("%s %v. %s", v1alpha1.PreservedNodeDrainUnsuccessfulMessage, err, until)
		r.warning(s, reasonDrainFailed, actionPreserve, "Draining the preserved node %s failed: %v", node.Name, err)
		return corev1.ConditionFalse, msg, r.Options.ShortRetry
	}
	r.recordVolumeWait(s, node.Name, res)
	if res.Drained() || (force && len(res.Failed) == 0) {
		r.normal(s, reasonPreserved, actionPreserve, "Preserved node %s drained", node.Name)
		return corev1.ConditionTrue, v1alpha1.PreservedNodeDrainSuccessfulMessage + " " + until, 0
	}
	if len(res.Failed) > 0 {
		return corev1.ConditionFalse, fmt.Sprintf("%s %s. %s", v1alpha1.PreservedNodeDrainUnsuccessfulMessage, res.Summary(), until), r.Options.ShortRetry
	}
	next := r.Options.DrainPollInterval
	if left := failedAt.Add(r.drainTimeout(s)).Sub(s.now); left > 0 && left < next {
		next = left
	}
	return corev1.ConditionTrue, fmt.Sprintf("Draining the preserved node: %s. %s", res.Summary(), until), next
}

// stopPreservation ends the preservation of the machine, if there is any
// trace of it: the Node's Preserved condition becomes False, the
// autoscaler annotation goes if the controller set it, then the taint and
// the expiry. removeAnnotation also removes the preserve annotation from
// the Machine, and from the Node when fromNode, so that an expired
// preservation does not start again.
func (r *Reconciler) stopPreservation(ctx context.Context, s *scope, node *corev1.Node, removeAnnotation, fromNode bool) (phase.Result, error) {
	m := s.machine
	wasPreserved := m.Status.CurrentStatus.PreserveExpiryTime != nil
	if removeAnnotation {
		setMachineAnnotation(m, v1alpha1.PreserveAnnotation, "")
	}
	if c := preservation.Condition(m.Status.Conditions); node == nil && c != nil && c.Status == corev1.ConditionTrue {
		preservation.SetCondition(&m.Status.Conditions, corev1.ConditionFalse, c.Reason, v1alpha1.PreservationStoppedMessage, s.now)
	}
	nodeCond := (*corev1.NodeCondition)(nil)
	if node != nil {
		nodeCond = preservation.Condition(node.Status.Conditions)
	}
	nodePreserved := nodeCond != nil && nodeCond.Status == corev1.ConditionTrue
	// Only the Node of a machine that was preserved is cleaned up: the
	// autoscaler annotation may also be a rolling update's, and the Node
	// is not read again for every machine that never was preserved.
	if node != nil && (wasPreserved || nodePreserved || preservation.HasTaint(node) || (removeAnnotation && fromNode)) {
		if nodePreserved {
			c := nodeCond
			if err := r.setNodePreservedCondition(ctx, s, corev1.ConditionFalse, c.Reason, v1alpha1.PreservationStoppedMessage); err != nil {
				return phase.Result{}, err
			}
		}
		updated := s.node.DeepCopy()
		if updated.Annotations[v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation] != "" {
			delete(updated.Annotations, v1alpha1.ClusterAutoscalerScaleDownDisabledAnnotation)
			delete(updated.Annotations, v1alpha1.ClusterAutoscalerScaleDownDisabledByMCMAnnotation)
		}
		if removeAnnotation && fromNode {
			delete(updated.Annotations, v1alpha1.PreserveAnnotation)
			setMachineAnnotation(m, v1alpha1.LastAppliedNodePreserveValueAnnotation, "")
		}
		preservation.RemoveTaint(updated)
		if err := r.patchNode(ctx, s, s.node, updated); err != nil {
			return phase.Result{}, err
		}
	}
	m.Status.CurrentStatus.PreserveExpiryTime = nil
	if wasPreserved {
		s.log.Info("Preservation stopped")
		r.normal(s, reasonPreservationStopped, actionPreserve, "Preservation stopped")
	}
	return phase.Result{}, nil
}

// recoverPreserved is the health check of a preserved Failed machine: its
// Node healthy again makes it Running (the preservation phase then stops a
// "when-failed" or "auto-preserved" preservation and lifts the taint);
// otherwise it stays Failed.
func (r *Reconciler) recoverPreserved(s *scope, healthy bool) {
	if !healthy {
		return
	}
	m := s.machine
	r.releasePermit(m)
	m.Status.UnhealthySince = nil
	setPhase(s, v1alpha1.MachineRunning, false)
	setLastOperation(s, v1alpha1.MachineOperationHealthCheck, v1alpha1.MachineStateSuccessful, "",
		fmt.Sprintf("Node %s of the preserved Failed machine is healthy again", s.nodeName()))
	r.normal(s, reasonHealthy, actionHealthCheck, "Node %s of the preserved Failed machine is healthy again", s.nodeName())
}

// patchNode writes the Node's metadata and taints when they changed and
// keeps the written Node in the scope. The taint list is replaced whole by
// a merge patch: the write is locked, so that a taint another controller
// added meanwhile is not lost (a conflict retries the reconcile).
func (r *Reconciler) patchNode(ctx context.Context, s *scope, before, after *corev1.Node) error {
	if equality.Semantic.DeepEqual(before.ObjectMeta, after.ObjectMeta) && equality.Semantic.DeepEqual(before.Spec, after.Spec) {
		return nil
	}
	var opts []setup.PatchOption
	if !equality.Semantic.DeepEqual(before.Spec.Taints, after.Spec.Taints) {
		opts = append(opts, setup.LockObject())
	}
	if err := r.writeNode(ctx, before, after, opts...); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("patching node %s for preservation: %w", after.Name, err)
	}
	s.node = after
	return nil
}

// setNodePreservedCondition writes the Node's Preserved condition (a
// strategic merge patch of its status: the kubelet's conditions are neither
// sent nor overwritten) and mirrors the Node's conditions on the Machine.
func (r *Reconciler) setNodePreservedCondition(ctx context.Context, s *scope, status corev1.ConditionStatus, reason, message string) error {
	updated := s.node.DeepCopy()
	if preservation.SetCondition(&updated.Status.Conditions, status, reason, message, s.now) {
		if err := r.writeNode(ctx, s.node, updated, setup.Strategic()); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("writing the %s condition of node %s: %w", v1alpha1.NodePreserved, updated.Name, err)
		}
		s.node = updated
	}
	copyNodeConditions(s, s.node)
	return nil
}

// setMachineAnnotation sets an annotation of the machine; "" removes it.
func setMachineAnnotation(m *v1alpha1.Machine, key, value string) {
	if value == "" {
		delete(m.Annotations, key)
		return
	}
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = value
}

func setNodeAnnotation(n *corev1.Node, key, value string) {
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	n.Annotations[key] = value
}
