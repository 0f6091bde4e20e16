package machine

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/drain"
	"github.com/machina-io/machina/core/internal/inplace"
)

// Events of the in-place update path.
const (
	reasonInPlaceSelected  = "InPlaceUpdateSelected"
	reasonInPlaceReady     = "ReadyForInPlaceUpdate"
	reasonInPlaceUpdated   = "InPlaceUpdateSuccessful"
	reasonInPlaceFailed    = "InPlaceUpdateFailed"
	reasonInPlaceCancelled = "InPlaceUpdateCancelled"
	actionInPlaceUpdate    = "InPlaceUpdate"
)

// reconcileInPlace is the Machine's side of an in-place update
// (docs/in-place-updates.md). A rollout marks the machine's Node with
// labels; this phase turns them into the Node's InPlaceUpdate condition
// (copied into the Machine's status.conditions) and the machine's phase:
//
//   - candidate-for-update → CandidateForUpdate; selected-for-update →
//     SelectedForUpdate, and the Node is drained with the same
//     non-blocking drain a deletion uses (one pass per reconcile);
//   - drained → ReadyForUpdate, the go signal for the node's agent, and
//     phase InPlaceUpdating (lastUpdateTime = now);
//   - the agent's update-result → UpdateSuccessful or UpdateFailed and
//     phase InPlaceUpdateSuccessful or InPlaceUpdateFailed; no result
//     within the in-place timeout → InPlaceUpdateFailed;
//   - InPlaceUpdateSuccessful → Running once the rollout took the
//     update-result label off the Node.
//
// The health timeout does not apply in the in-place phases (a node that
// reboots to update is not a broken node): reconcileHealth skips them.
func (r *Reconciler) reconcileInPlace(ctx context.Context, s *scope) (phase.Result, error) {
	res, err := r.inPlaceStep(ctx, s)
	// A selection whose drain did not finish in this reconcile is written
	// now, and its event sent (one that did went out with the go signal).
	r.noteSelection(s)
	if ferr := r.flushInPlaceCondition(ctx, s); ferr != nil {
		return phase.Result{}, errors.Join(err, ferr)
	}
	return res, err
}

// noteSelection sends the InPlaceUpdateSelected event held for the drain
// of this reconcile, if the go signal did not take it.
func (r *Reconciler) noteSelection(s *scope) {
	if s.selectionOwed {
		s.selectionOwed = false
		r.normal(s, reasonInPlaceSelected, actionInPlaceUpdate, "Node %s is selected for an in-place update; draining it", s.nodeName())
	}
}

// inPlaceStep takes the in-place update one step; see reconcileInPlace.
func (r *Reconciler) inPlaceStep(ctx context.Context, s *scope) (phase.Result, error) {
	if r.Target == nil || s.nodeName() == "" {
		return phase.Result{}, nil
	}
	current := s.machine.Status.CurrentStatus.Phase
	inPlacePhase := isInPlacePhase(current)
	switch {
	case inPlacePhase, current == v1alpha1.MachineRunning, current == v1alpha1.MachineUnknown, current == v1alpha1.MachineAvailable:
	default:
		// Not joined yet, or Failed: no rollout drives it.
		return phase.Result{}, nil
	}
	node, err := r.loadNode(ctx, s)
	if err != nil {
		return phase.Result{}, err
	}
	if node == nil {
		if current == v1alpha1.MachineInPlaceUpdating {
			return r.inPlaceTimeout(ctx, s)
		}
		return phase.Result{}, nil
	}

	if next := inplace.NextReason(node); next != "" {
		msg := ""
		if next == v1alpha1.UpdateFailed {
			msg = inplace.FailedMessage(node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason])
		}
		if next == v1alpha1.SelectedForUpdate && drainsNow(current, node) {
			// The drain below runs in this reconcile; a node with nothing
			// to drain gets the go signal at once, in one write with the
			// selection instead of two, and one event.
			deferInPlaceCondition(s, next, msg)
		} else if err := r.setInPlaceCondition(ctx, s, next, msg); err != nil {
			return phase.Result{}, err
		}
		switch next {
		case v1alpha1.SelectedForUpdate:
			// Sent by noteSelection, unless the drain finishes in this
			// reconcile and the go signal's event says both.
			s.selectionOwed = true
		case inplace.ReasonUpdateCancelled:
			if inPlacePhase {
				r.normal(s, reasonInPlaceCancelled, actionInPlaceUpdate, "The in-place update of node %s was cancelled: the node is no longer a candidate", node.Name)
			}
		}
	}
	if current == v1alpha1.MachineRunning && missedGoSignal(s.node) {
		// The go signal was written but the phase was not (the Machine's
		// write failed after the Node's, or the manager stopped between
		// them): catch up, then take the agent's answer if it came
		// meanwhile (NextReason has already turned it into the reason).
		r.enterInPlaceUpdating(s)
		current, inPlacePhase = v1alpha1.MachineInPlaceUpdating, true
	}
	if inPlacePhase {
		// reconcileHealth does not look at machines in these phases.
		copyNodeConditions(s, s.node)
	}

	switch reason := inplace.Reason(s.node); {
	case current == v1alpha1.MachineRunning && reason == v1alpha1.SelectedForUpdate:
		return r.drainForInPlace(ctx, s)
	case inPlacePhase && reason == inplace.ReasonUpdateCancelled:
		setPhase(s, v1alpha1.MachineRunning, false)
		setLastOperation(s, v1alpha1.MachineOperationInPlaceUpdate, v1alpha1.MachineStateFailed, "",
			fmt.Sprintf("The in-place update of node %s was cancelled: the node is no longer a candidate", node.Name))
		return phase.Result{}, nil
	case (current == v1alpha1.MachineInPlaceUpdating || current == v1alpha1.MachineInPlaceUpdateFailed) && reason == v1alpha1.UpdateSuccessful:
		setPhase(s, v1alpha1.MachineInPlaceUpdateSuccessful, false)
		setLastOperation(s, v1alpha1.MachineOperationInPlaceUpdate, v1alpha1.MachineStateSuccessful, "",
			fmt.Sprintf("Node %s was updated in place", node.Name))
		r.normal(s, reasonInPlaceUpdated, actionInPlaceUpdate, "Node %s was updated in place", node.Name)
		return phase.Result{}, nil
	case current == v1alpha1.MachineInPlaceUpdating && reason == v1alpha1.UpdateFailed:
		why := node.Annotations[v1alpha1.AnnotationKeyMachineUpdateFailedReason]
		if why == "" {
			why = "the node's agent gave no reason"
		}
		desc := fmt.Sprintf("In-place update of node %s failed: %s", node.Name, why)
		setPhase(s, v1alpha1.MachineInPlaceUpdateFailed, false)
		setLastOperation(s, v1alpha1.MachineOperationInPlaceUpdate, v1alpha1.MachineStateFailed, "", desc)
		r.warning(s, reasonInPlaceFailed, actionInPlaceUpdate, "%s", desc)
		return phase.Result{}, nil
	case current == v1alpha1.MachineInPlaceUpdating:
		return r.inPlaceTimeout(ctx, s)
	case current == v1alpha1.MachineInPlaceUpdateSuccessful && inplace.Result(node) == "":
		// The rollout moved the machine and cleaned the Node up; health
		// checks take over (reconcileHealth runs next).
		setPhase(s, v1alpha1.MachineRunning, false)
		setLastOperation(s, v1alpha1.MachineOperationHealthCheck, v1alpha1.MachineStateSuccessful, "",
			fmt.Sprintf("Node %s was updated in place and is back in service", node.Name))
		if reason == v1alpha1.SelectedForUpdate {
			// Already selected for the next update (a rollback re-targets a
			// node whose agent applied the abandoned template): the Node
			// event of that selection has come and gone, and the phase
			// written here brings no event of its own, so the drain starts
			// now, not at the next resync.
			return r.drainForInPlace(ctx, s)
		}
		return phase.Result{}, nil
	}
	return phase.Result{}, nil
}

// drainsNow tells whether a machine in phase current whose Node becomes
// SelectedForUpdate is drained in the same reconcile (inPlaceStep's
// switch): a Running machine, or one whose last in-place update has just
// been cleaned up.
func drainsNow(current v1alpha1.MachinePhase, node *corev1.Node) bool {
	return current == v1alpha1.MachineRunning ||
		(current == v1alpha1.MachineInPlaceUpdateSuccessful && inplace.Result(node) == "")
}

// missedGoSignal tells whether a node was given the go signal
// (DrainSuccessful, ReadyForUpdate), or, still selected, has answered it
// (an update-result with UpdateSuccessful or UpdateFailed): its machine
// should be in an in-place phase, and a Running one missed the
// InPlaceUpdating write. The result's label tells a fresh answer from a
// finished update: the rollout takes it off before the machine is Running
// again.
func missedGoSignal(n *corev1.Node) bool {
	switch inplace.Reason(n) {
	case v1alpha1.DrainSuccessful, v1alpha1.ReadyForUpdate:
		return true
	case v1alpha1.UpdateSuccessful, v1alpha1.UpdateFailed:
		return inplace.IsSelected(n) && inplace.Result(n) != ""
	}
	return false
}

func isInPlacePhase(p v1alpha1.MachinePhase) bool {
	switch p {
	case v1alpha1.MachineInPlaceUpdating, v1alpha1.MachineInPlaceUpdateSuccessful, v1alpha1.MachineInPlaceUpdateFailed:
		return true
	}
	return false
}

// drainForInPlace runs one drain pass over the selected Node and comes
// back while pods remain; once drained it gives the go signal. The drain
// is forced once the drain timeout has passed since the node was selected
// (the SelectedForUpdate transition), or when the Node has been
// unreachable for Options.UnreachableThreshold.
func (r *Reconciler) drainForInPlace(ctx context.Context, s *scope) (phase.Result, error) {
	node := s.node
	selectedAt := s.now
	if c := inplace.Condition(node); c != nil {
		selectedAt = c.LastTransitionTime.Time
	}
	force := ""
	if timeout := r.drainTimeout(s); !s.now.Before(selectedAt.Add(timeout)) {
		force = fmt.Sprintf("the drain timeout of %s has passed since the node was selected at %s", timeout, selectedAt.UTC().Format(time.RFC3339))
	} else if why, unreachable := drain.Unreachable(node, s.now, r.Options.UnreachableThreshold); unreachable {
		force = why
	}
	res, err := r.drainPass(ctx, s, node.Name, force != "", false)
	if err != nil {
		r.noteSelection(s)
		desc := fmt.Sprintf("Draining node %s for an in-place update failed: %v", node.Name, err)
		setLastOperation(s, v1alpha1.MachineOperationDrainNode, v1alpha1.MachineStateFailed, "", desc)
		r.warning(s, reasonDrainFailed, actionDrain, "%s", desc)
		return phase.Result{RequeueAfter: r.Options.ShortRetry}, nil
	}
	r.recordVolumeWait(s, node.Name, res)
	drained := res.Drained() || (force != "" && len(res.Failed) == 0)
	if !drained {
		r.noteSelection(s)
		msg := fmt.Sprintf("Draining node %s for an in-place update: %s", node.Name, res.Summary())
		if force != "" {
			msg = fmt.Sprintf("Forced drain of node %s for an in-place update (%s): %s", node.Name, force, res.Summary())
		}
		prev := s.machine.Status.LastOperation.Description
		setLastOperation(s, v1alpha1.MachineOperationDrainNode, v1alpha1.MachineStateProcessing, "", msg)
		if prev != msg {
			r.normal(s, reasonDraining, actionDrain, "%s", msg)
		}
		next := r.Options.DrainPollInterval
		if until := selectedAt.Add(r.drainTimeout(s)).Sub(s.now); until > 0 && until < next {
			next = until
		}
		return phase.Result{RequeueAfter: next}, nil
	}
	if err := r.setInPlaceCondition(ctx, s, v1alpha1.ReadyForUpdate, ""); err != nil {
		return phase.Result{}, err
	}
	copyNodeConditions(s, s.node)
	r.enterInPlaceUpdating(s)
	if s.selectionOwed {
		// Selected and drained in this reconcile: one event says both.
		s.selectionOwed = false
		r.normal(s, reasonInPlaceReady, actionInPlaceUpdate, "Node %s selected for an in-place update and drained; ready for the in-place update", node.Name)
	} else {
		r.normal(s, reasonInPlaceReady, actionInPlaceUpdate, "Node %s drained; ready for the in-place update", node.Name)
	}
	return r.inPlaceTimeout(ctx, s)
}

// enterInPlaceUpdating moves the machine to InPlaceUpdating; the in-place
// timeout counts from now (the phase's lastUpdateTime).
func (r *Reconciler) enterInPlaceUpdating(s *scope) {
	setPhase(s, v1alpha1.MachineInPlaceUpdating, false)
	setLastOperation(s, v1alpha1.MachineOperationInPlaceUpdate, v1alpha1.MachineStateProcessing, "",
		fmt.Sprintf("Node %s drained; waiting for its agent to update it in place", s.nodeName()))
}

// inPlaceTimeout fails an InPlaceUpdating machine whose agent did not
// answer within the in-place timeout, counted from entering the phase;
// before that it asks to come back at the deadline.
//
// The Node keeps the go signal (a late answer still counts), with a message
// that says the update timed out: a cordoned node always says why.
func (r *Reconciler) inPlaceTimeout(ctx context.Context, s *scope) (phase.Result, error) {
	m := s.machine
	timeout := inplace.Timeout(m, r.Options.InPlaceUpdateTimeout)
	expired, left := inplace.Expired(inplace.PhaseSince(m), timeout, s.now)
	if !expired {
		return phase.Result{RequeueAfter: left}, nil
	}
	if s.node != nil && inplace.Reason(s.node) == v1alpha1.ReadyForUpdate {
		if err := r.setInPlaceCondition(ctx, s, v1alpha1.ReadyForUpdate, inplace.TimedOutMessage(timeout)); err != nil {
			return phase.Result{}, err
		}
		copyNodeConditions(s, s.node)
	}
	desc := fmt.Sprintf("In-place update of node %s timed out after %s", s.nodeName(), timeout)
	setPhase(s, v1alpha1.MachineInPlaceUpdateFailed, false)
	setLastOperation(s, v1alpha1.MachineOperationInPlaceUpdate, v1alpha1.MachineStateFailed, "", desc)
	r.warning(s, reasonInPlaceFailed, actionInPlaceUpdate, "%s", desc)
	return phase.Result{}, nil
}

// setInPlaceCondition writes the Node's InPlaceUpdate condition (a
// strategic merge patch of its status, so that the kubelet's conditions
// are left alone), together with a deferred one, and keeps the written
// Node in the scope.
func (r *Reconciler) setInPlaceCondition(ctx context.Context, s *scope, reason, message string) error {
	deferInPlaceCondition(s, reason, message)
	return r.flushInPlaceCondition(ctx, s)
}

// deferInPlaceCondition sets the InPlaceUpdate condition on the scope's
// Node without writing it: the next setInPlaceCondition or the end of
// reconcileInPlace writes it.
func deferInPlaceCondition(s *scope, reason, message string) {
	updated := s.node.DeepCopy()
	if !inplace.SetCondition(updated, reason, message, s.now) {
		return
	}
	if s.nodeWritten == nil {
		s.nodeWritten = s.node
	}
	s.node = updated
}

// flushInPlaceCondition writes a condition deferInPlaceCondition set. If
// the write fails, the scope's Node is the last one written again.
func (r *Reconciler) flushInPlaceCondition(ctx context.Context, s *scope) error {
	written := s.nodeWritten
	if written == nil {
		return nil
	}
	s.nodeWritten = nil
	if err := inplace.PatchStatus(ctx, r.Target, written, s.node); err != nil {
		s.node = written
		return err
	}
	// s.node holds the API server's answer: its version is the write's.
	r.rememberNodeWrite(s.node)
	return nil
}
