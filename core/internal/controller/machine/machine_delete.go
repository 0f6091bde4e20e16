package machine

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/drain"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/driverclass"
	"github.com/machina-io/machina/core/internal/mcmmetrics"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// deletionStep runs one step of the deletion flow. It returns the step to
// go to (the same one to stay), and when to run again.
type deletionStep func(ctx context.Context, s *scope) (v1alpha1.DeletionStep, phase.Result, error)

// deletionSteps is the deletion flow (Driver API §11.6), in order. The
// current step is read from status.deletionStep, never from a description.
func (r *Reconciler) deletionSteps() map[v1alpha1.DeletionStep]deletionStep {
	return map[v1alpha1.DeletionStep]deletionStep{
		v1alpha1.DeletionStepTerminating:             r.stepTerminating,
		v1alpha1.DeletionStepGetVMStatus:             r.stepGetVMStatus,
		v1alpha1.DeletionStepPreDrainHook:            r.stepPreDrainHook,
		v1alpha1.DeletionStepDrain:                   r.stepDrain,
		v1alpha1.DeletionStepDeleteVolumeAttachments: r.stepDeleteVolumeAttachments,
		v1alpha1.DeletionStepPreTerminateHook:        r.stepPreTerminateHook,
		v1alpha1.DeletionStepDeleteVM:                r.stepDeleteVM,
		v1alpha1.DeletionStepDeleteNode:              r.stepDeleteNode,
		v1alpha1.DeletionStepRemoveFinalizer:         r.stepRemoveFinalizer,
	}
}

// reconcileDelete runs the deletion flow from the step stored in
// status.deletionStep. A step that finishes at once hands over to the next
// in the same reconcile; the flow stops at a step that must wait (a drain
// with pods left, volumes to detach, a driver failure with its retry
// period) or fails, and the step reached is written to the status with the
// rest of the reconcile's changes, in its one status patch. A machine whose
// node has nothing to drain is thus deleted in one reconcile, its last write
// the finalizer's removal, where writing each step cost a status patch and
// a round through the work queue.
//
// Each step is safe to repeat, so a manager that stops in the middle of a
// chain resumes at the stored step and does again at most what that chain
// did (a DeleteMachine of a VM already gone answers OK). The order is
// unchanged: the VM goes before its Node, the Node before the finalizer.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (phase.Result, error) {
	if !controllerutil.ContainsFinalizer(s.machine, v1alpha1.MachineFinalizer) {
		// Not ours (any more): nothing to clean up.
		r.retries.forget(s.machine.UID)
		return phase.Result{}, nil
	}
	steps := r.deletionSteps()
	current := s.machine.Status.DeletionStep
	if current == "" {
		current = v1alpha1.DeletionStepTerminating
	}
	if _, ok := steps[current]; !ok {
		// A step this version does not know (written by a newer one):
		// start over; every step is safe to repeat.
		s.log.Info("Unknown deletion step, starting the deletion over", "step", current)
		current = v1alpha1.DeletionStepTerminating
	}
	if wait := r.retries.wait(s.machine.UID, current, s.now); wait > 0 {
		// The step failed and its retry period has not passed: whatever
		// event brought this reconcile, it waits (machine_retry_gate.go).
		return phase.Result{RequeueAfter: wait}, nil
	}
	log := s.log
	// At most one pass over the flow: a step never hands back to an earlier
	// one, and the bound keeps a future cycle from spinning here.
	for range len(steps) {
		s.log = log.WithValues("deletionStep", current)
		s.retryAfter = 0
		next, res, err := steps[current](ctx, s)
		if s.released {
			r.retries.forget(s.machine.UID)
		}
		if err != nil || s.released {
			return res, err
		}
		if s.retryAfter > 0 {
			// The period runs from the failure, not from the start of a
			// reconcile that may have run earlier steps first.
			r.retries.hold(s.machine.UID, current, time.Now().Add(s.retryAfter))
		}
		if next == current || res != (phase.Result{}) {
			storeDeletionStep(s, next)
			return res, nil
		}
		current = next
	}
	storeDeletionStep(s, current)
	return phase.Result{RequeueAfter: requeueNow}, nil
}

// storeDeletionStep records step in the status, with the time the machine
// entered it when it is a new one.
func storeDeletionStep(s *scope, step v1alpha1.DeletionStep) {
	if step == s.machine.Status.DeletionStep {
		return
	}
	s.machine.Status.DeletionStep = step
	t := metav1.NewTime(s.now)
	s.machine.Status.DeletionStepStartTime = &t
}

// stepTerminating marks the machine as being deleted.
func (r *Reconciler) stepTerminating(ctx context.Context, s *scope) (v1alpha1.DeletionStep, phase.Result, error) {
	if err := r.markNodeTerminating(ctx, s); err != nil {
		return v1alpha1.DeletionStepTerminating, phase.Result{}, err
	}
	setPhase(s, v1alpha1.MachineTerminating, false)
	s.machine.Status.CurrentStatus.PreserveExpiryTime = nil
	setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "",
		"Machine is being deleted; looking up its VM and node")
	// The one Normal event of a deletion that goes well (besides Draining
	// while a drain waits): each step is told in status.lastOperation, and
	// failures in Warning events.
	r.normal(s, reasonDeleting, actionDelete, "Deleting the machine; status.lastOperation tells each step")
	return v1alpha1.DeletionStepGetVMStatus, phase.Result{}, nil
}

// stepGetVMStatus learns the machine's node name when it has none yet: from
// a Node labelled with the machine's name, or else from the driver.
func (r *Reconciler) stepGetVMStatus(ctx context.Context, s *scope) (v1alpha1.DeletionStep, phase.Result, error) {
	if r.Target == nil || s.nodeName() != "" {
		return v1alpha1.DeletionStepPreDrainHook, phase.Result{}, nil
	}
	nodes := &corev1.NodeList{}
	if err := r.Target.List(ctx, nodes, client.MatchingLabels{v1alpha1.NodeMachineNameLabel: s.machine.Name}); err != nil {
		return v1alpha1.DeletionStepGetVMStatus, phase.Result{}, fmt.Errorf("listing nodes of machine: %w", err)
	}
	if len(nodes.Items) == 1 {
		setNodeLabel(s, nodes.Items[0].Name)
		return v1alpha1.DeletionStepPreDrainHook, phase.Result{}, nil
	}

	if err := r.loadClass(ctx, s); err != nil {
		res, err := r.classProblem(s, v1alpha1.MachineOperationDelete, err)
		return v1alpha1.DeletionStepGetVMStatus, res, err
	}
	resp, err := s.driver.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{
		Machine:      machineMessage(s.machine),
		MachineClass: driverclass.Message(s.class),
		Secrets:      s.secrets,
	})
	code := driver.Code(err)
	rc := statusForDeleteTable.react(code)
	if !rc.proceed {
		return v1alpha1.DeletionStepGetVMStatus, r.deletionFailed(s, statusForDeleteTable, code, status.Convert(err).Message()), nil
	}
	switch {
	case rc.warn:
		desc := fmt.Sprintf("GetMachineStatus failed (%s: %s); continuing the deletion without a node name", code, status.Convert(err).Message())
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, errorCodeName(code), desc)
		r.warning(s, reasonDeleteFailed, actionDelete, "%s", desc)
	case code == codes.OK && resp.GetNodeName() != "":
		setNodeLabel(s, resp.GetNodeName())
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "",
			fmt.Sprintf("Found node %s of the machine; draining it", resp.GetNodeName()))
	default:
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "",
			"The VM was not found at the provider and no node is known; continuing the deletion")
	}
	return v1alpha1.DeletionStepPreDrainHook, phase.Result{}, nil
}

// stepPreDrainHook waits for the machine's pre-drain hooks (Cluster API's
// pre-drain.delete.hook.machine.cluster.x-k8s.io/<name>) to be removed.
func (r *Reconciler) stepPreDrainHook(_ context.Context, s *scope) (v1alpha1.DeletionStep, phase.Result, error) {
	return r.waitForHooks(s, preDrainHooks)
}

// stepPreTerminateHook waits, after the drain and before the VM is
// deleted, for the machine's pre-terminate hooks (Cluster API's
// pre-terminate.delete.hook.machine.cluster.x-k8s.io/<name>) to be removed.
func (r *Reconciler) stepPreTerminateHook(_ context.Context, s *scope) (v1alpha1.DeletionStep, phase.Result, error) {
	return r.waitForHooks(s, preTerminateHooks)
}

func setNodeLabel(s *scope, name string) {
	if s.machine.Labels == nil {
		s.machine.Labels = map[string]string{}
	}
	s.machine.Labels[v1alpha1.NodeLabelKey] = name
}

// stepDrain runs one drain pass over the Node and comes back after
// Options.DrainPollInterval while pods remain or the volumes of an evicted
// pod have not detached yet (the wait is stored in VolumeWaitAnnotation,
// so no worker waits). The drain is forced (pods
// deleted without eviction, then the VolumeAttachments removed) once the
// drain timeout has passed since the deletionTimestamp, when the Node has
// been unreachable for Options.UnreachableThreshold, or when the Machine
// carries the label force-deletion=True.
func (r *Reconciler) stepDrain(ctx context.Context, s *scope) (v1alpha1.DeletionStep, phase.Result, error) {
	if _, excluded := s.machine.Annotations[v1alpha1.ExcludeNodeDrainingAnnotation]; excluded {
		desc := fmt.Sprintf("The drain is skipped: the machine has the annotation %s; deleting the VM", v1alpha1.ExcludeNodeDrainingAnnotation)
		setDrainedCondition(s, metav1.ConditionTrue, "DrainExcluded", desc)
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "", desc)
		return v1alpha1.DeletionStepPreTerminateHook, phase.Result{}, nil
	}
	node, err := r.loadNode(ctx, s)
	if err != nil {
		return v1alpha1.DeletionStepDrain, phase.Result{}, err
	}
	if node == nil {
		setDrainedCondition(s, metav1.ConditionTrue, "NoNode", "The machine has no node to drain")
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "",
			"No node to drain; deleting the VM")
		return v1alpha1.DeletionStepPreTerminateHook, phase.Result{}, nil
	}

	forceReason := r.forceDrainReason(s, node)
	res, err := r.drainPass(ctx, s, node.Name, forceReason != "", false)
	if err != nil {
		desc := fmt.Sprintf("Draining node %s failed: %v", node.Name, err)
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateFailed, "", desc)
		r.warning(s, reasonDrainFailed, actionDrain, "%s", desc)
		return v1alpha1.DeletionStepDrain, phase.Result{RequeueAfter: r.Options.ShortRetry}, nil
	}
	// The wait for a pod's volumes lives on the Machine between passes.
	r.recordVolumeWait(s, node.Name, res)

	if forceReason != "" {
		if len(res.Failed) > 0 {
			desc := fmt.Sprintf("Forced drain of node %s (%s): %s", node.Name, forceReason, res.Summary())
			setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateFailed, "", desc)
			setDrainedCondition(s, metav1.ConditionFalse, "ForceDraining", desc)
			return v1alpha1.DeletionStepDrain, phase.Result{RequeueAfter: r.Options.ShortRetry}, nil
		}
		desc := fmt.Sprintf("Forced drain of node %s (%s): deleted %d pods without eviction; deleting its VolumeAttachments", node.Name, forceReason, res.Evicted)
		setDrainedCondition(s, metav1.ConditionTrue, "ForceDrained", desc)
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "", desc)
		r.warning(s, reasonForceDrain, actionDrain, "%s", desc)
		observeDrain(s, "forced")
		return v1alpha1.DeletionStepDeleteVolumeAttachments, phase.Result{}, nil
	}

	if res.Drained() {
		desc := fmt.Sprintf("Node %s drained; deleting the VM", node.Name)
		setDrainedCondition(s, metav1.ConditionTrue, "Drained", fmt.Sprintf("Node %s drained", node.Name))
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "", desc)
		observeDrain(s, "drained")
		return v1alpha1.DeletionStepPreTerminateHook, phase.Result{}, nil
	}

	if blocked, ok := r.drainBlocked(s, node.Name, res); ok {
		return v1alpha1.DeletionStepDrain, blocked, nil
	}
	msg := fmt.Sprintf("Draining node %s: %s", node.Name, res.Summary())
	prev := s.machine.Status.LastOperation.Description
	setDrainedCondition(s, metav1.ConditionFalse, "Draining", msg)
	setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "", msg)
	if prev != msg {
		r.normal(s, reasonDraining, actionDrain, "%s", msg)
	}
	// Come back for the next pass, and no later than the drain timeout, when
	// the drain turns into a forced one.
	return v1alpha1.DeletionStepDrain, phase.Result{RequeueAfter: r.untilDrainTimeout(s, r.Options.DrainPollInterval)}, nil
}

// forceDrainReason says why the drain must be forced, or "" when it is a
// graceful one.
func (r *Reconciler) forceDrainReason(s *scope, node *corev1.Node) string {
	m := s.machine
	if m.Labels[v1alpha1.ForceDeletionLabel] == v1alpha1.ForceDeletionValue {
		return fmt.Sprintf("the machine has the label %s=%s", v1alpha1.ForceDeletionLabel, v1alpha1.ForceDeletionValue)
	}
	if timeout, start := r.drainTimeout(s), v1alpha1.DrainClockStart(m); !s.now.Before(start.Add(timeout)) {
		since := "the deletion was seen"
		if !start.Equal(deletionStart(s)) {
			since = "the removal of the pre-drain hooks"
		}
		return fmt.Sprintf("the drain timeout of %s has passed since %s at %s", timeout, since, start.UTC().Format(time.RFC3339))
	}
	if why, unreachable := drain.Unreachable(node, s.now, r.Options.UnreachableThreshold); unreachable {
		return why
	}
	return ""
}

// stepDeleteVolumeAttachments deletes the VolumeAttachments of the Node
// after a forced drain, and waits until they are gone: no kubelet unmounted
// the volumes, so nobody else would release them.
func (r *Reconciler) stepDeleteVolumeAttachments(ctx context.Context, s *scope) (v1alpha1.DeletionStep, phase.Result, error) {
	name := s.nodeName()
	if name == "" {
		return v1alpha1.DeletionStepPreTerminateHook, phase.Result{}, nil
	}
	remaining, err := r.Drainer.DeleteVolumeAttachments(ctx, name)
	if err != nil {
		desc := fmt.Sprintf("Deleting the VolumeAttachments of node %s failed: %v", name, err)
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateFailed, "", desc)
		r.warning(s, reasonDrainFailed, actionDrain, "%s", desc)
		return v1alpha1.DeletionStepDeleteVolumeAttachments, phase.Result{RequeueAfter: r.Options.ShortRetry}, nil
	}
	if remaining > 0 {
		setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "",
			fmt.Sprintf("Waiting for %d VolumeAttachments of node %s to be deleted", remaining, name))
		return v1alpha1.DeletionStepDeleteVolumeAttachments, phase.Result{RequeueAfter: r.Options.ShortRetry}, nil
	}
	setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "",
		fmt.Sprintf("VolumeAttachments of node %s deleted; deleting the VM", name))
	return v1alpha1.DeletionStepPreTerminateHook, phase.Result{}, nil
}

// stepDeleteVM deletes the VM through the driver, by provider ID when the
// machine has one and by name otherwise. The VM goes before its Node, so
// that a kubelet still running cannot register the Node again.
func (r *Reconciler) stepDeleteVM(ctx context.Context, s *scope) (v1alpha1.DeletionStep, phase.Result, error) {
	if err := r.loadClass(ctx, s); err != nil {
		res, err := r.classProblem(s, v1alpha1.MachineOperationDelete, err)
		return v1alpha1.DeletionStepDeleteVM, res, err
	}
	m := s.machine
	resp, err := s.driver.DeleteMachine(ctx, &driverv1alpha1.DeleteMachineRequest{
		Machine:        machineMessage(m),
		MachineClass:   driverclass.Message(s.class),
		Secrets:        s.secrets,
		LastKnownState: m.Status.LastKnownState,
	})
	code := driver.Code(err)
	if !deleteMachineTable.react(code).proceed {
		return v1alpha1.DeletionStepDeleteVM, r.deletionFailed(s, deleteMachineTable, code, status.Convert(err).Message()), nil
	}
	if lks := resp.GetLastKnownState(); lks != "" && len(lks) <= maxLastKnownStateLength {
		m.Status.LastKnownState = lks
	}
	what := "VM deleted"
	if m.Spec.ProviderID != "" {
		what = fmt.Sprintf("VM %s deleted", m.Spec.ProviderID)
	}
	setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "", what+"; deleting the node")
	mcmmetrics.ObserveDelete(r.mcmLabels(ctx, s), s.now.Sub(s.machine.DeletionTimestamp.Time))
	return v1alpha1.DeletionStepDeleteNode, phase.Result{}, nil
}

// stepDeleteNode deletes the Node object (first removing the Node
// finalizer the Node controller put there to see the deletion coming) and
// the machine's bootstrap token, if any is left.
func (r *Reconciler) stepDeleteNode(ctx context.Context, s *scope) (v1alpha1.DeletionStep, phase.Result, error) {
	if r.Target == nil {
		return v1alpha1.DeletionStepRemoveFinalizer, phase.Result{}, nil
	}
	if name := s.nodeName(); name != "" {
		if err := r.deleteNode(ctx, name); err != nil {
			desc := fmt.Sprintf("Deleting node %s failed: %v", name, err)
			setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateFailed, "", desc)
			r.warning(s, reasonDeleteFailed, actionDelete, "%s", desc)
			return v1alpha1.DeletionStepDeleteNode, phase.Result{RequeueAfter: r.Options.ShortRetry}, nil
		}
	}
	if r.Tokens != nil && !joinedWhenDeleted(s) {
		if err := r.Tokens.Delete(withoutClientLogs(ctx), types.NamespacedName{Namespace: s.machine.Namespace, Name: s.machine.Name}); err != nil {
			s.log.Error(err, "Deleting the machine's bootstrap token; retrying")
			return v1alpha1.DeletionStepDeleteNode, phase.Result{RequeueAfter: r.Options.ShortRetry}, nil
		}
	}
	setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateProcessing, "",
		"VM and node deleted; removing the machine's finalizer")
	return v1alpha1.DeletionStepRemoveFinalizer, phase.Result{}, nil
}

// joinedWhenDeleted tells whether this reconcile began with the machine in
// a phase it reaches only after it joined: its bootstrap token was deleted
// then (machine_health.go), and a DELETE now would only be answered
// NotFound, one wasted request per machine of a scale-down. A token whose
// deletion at join failed expires by itself at the creation timeout. When
// the deletion began in an earlier reconcile (a drain that waited), the
// phase read is Terminating and the token is deleted, as before.
func joinedWhenDeleted(s *scope) bool {
	switch s.original.Status.CurrentStatus.Phase {
	case v1alpha1.MachineRunning, v1alpha1.MachineUnknown, v1alpha1.MachineInPlaceUpdating,
		v1alpha1.MachineInPlaceUpdateSuccessful, v1alpha1.MachineInPlaceUpdateFailed:
		return true
	}
	return false
}

// deleteNode removes the Node finalizer and deletes the Node; a Node
// already gone is fine. A Node that was registered again
// meanwhile (another UID) fails the precondition and is deleted on the
// retry: its VM is gone, so it is stale.
func (r *Reconciler) deleteNode(ctx context.Context, name string) error {
	node := &corev1.Node{}
	if err := r.Target.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return client.IgnoreNotFound(err)
	}
	if controllerutil.ContainsFinalizer(node, v1alpha1.NodeFinalizer) {
		updated := node.DeepCopy()
		controllerutil.RemoveFinalizer(updated, v1alpha1.NodeFinalizer)
		// A strategic merge patch removes this one finalizer and keeps any
		// other, so it needs no resourceVersion and cannot lose a race with
		// the kubelet's status updates.
		if err := r.writeNode(ctx, node, updated, setup.Strategic()); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
	if err := r.Target.Delete(ctx, node, client.Preconditions{UID: &node.UID}); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

// stepRemoveFinalizer releases the Machine; the API server then removes it.
func (r *Reconciler) stepRemoveFinalizer(ctx context.Context, s *scope) (v1alpha1.DeletionStep, phase.Result, error) {
	if err := r.removeFinalizer(ctx, s); err != nil {
		return v1alpha1.DeletionStepRemoveFinalizer, phase.Result{}, err
	}
	return v1alpha1.DeletionStepRemoveFinalizer, phase.Result{}, nil
}

// deletionFailed records a deletion failure (§7.3): the machine stays at its
// step with lastOperation {Delete, Failed, errorCode}, a Warning event, and
// the step runs again after the table's retry period.
func (r *Reconciler) deletionFailed(s *scope, t callTable, code codes.Code, msg string) phase.Result {
	rc := t.react(code)
	desc := fmt.Sprintf("%s failed (%s): %s", t.rpc, errorCodeName(code), msg)
	if rc.brokenDriver {
		desc = fmt.Sprintf("Broken driver: it answered UNIMPLEMENTED to %s, which it must serve: %s", t.rpc, msg)
		s.log.Error(nil, "Broken driver: UNIMPLEMENTED from an RPC it must serve", "rpc", t.rpc)
	}
	setLastOperation(s, v1alpha1.MachineOperationDelete, v1alpha1.MachineStateFailed, errorCodeName(code), desc)
	r.warning(s, reasonDeleteFailed, actionDelete, "%s", desc)
	s.retryAfter = r.Options.after(rc.retry)
	return phase.Result{RequeueAfter: s.retryAfter}
}
