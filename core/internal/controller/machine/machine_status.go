package machine

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// setPhase sets the machine's phase. currentStatus.lastUpdateTime moves only
// when the phase changes, so that re-setting the same phase writes nothing.
func setPhase(s *scope, phase v1alpha1.MachinePhase, timeoutActive bool) {
	cs := &s.machine.Status.CurrentStatus
	if cs.Phase == phase && cs.TimeoutActive == timeoutActive {
		return
	}
	if cs.Phase != phase {
		cs.LastUpdateTime = metav1.NewTime(s.now)
	}
	cs.Phase = phase
	cs.TimeoutActive = timeoutActive
}

// setLastOperation records what the controller last did. Its
// lastUpdateTime moves only when something else in it changes, so that a
// retry that fails the same way writes nothing.
func setLastOperation(s *scope, typ v1alpha1.MachineOperationType, state v1alpha1.MachineState, errorCode, description string) {
	lo := &s.machine.Status.LastOperation
	if lo.Type == typ && lo.State == state && lo.ErrorCode == errorCode && lo.Description == description {
		return
	}
	*lo = v1alpha1.LastOperation{
		Type:           typ,
		State:          state,
		ErrorCode:      errorCode,
		Description:    description,
		LastUpdateTime: metav1.NewTime(s.now),
	}
}

// setDrainedCondition sets machina's own Drained condition; its transition
// time moves only when its status does.
func setDrainedCondition(s *scope, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.machine.Status.MachineConditions, metav1.Condition{
		Type:               v1alpha1.MachineConditionDrained,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: s.machine.Generation,
		LastTransitionTime: metav1.NewTime(s.now),
	})
}

// copyNodeConditions mirrors the Node's conditions into status.conditions,
// as MCM does. A condition whose status, reason, message and transition time
// are unchanged keeps the heartbeat time already stored: kubelet heartbeats
// alone must not cause a status write per machine every few minutes.
func copyNodeConditions(s *scope, node *corev1.Node) {
	old := s.machine.Status.Conditions
	out := make([]corev1.NodeCondition, 0, len(node.Status.Conditions))
	for _, c := range node.Status.Conditions {
		for _, o := range old {
			if o.Type == c.Type && o.Status == c.Status && o.Reason == c.Reason && o.Message == c.Message &&
				o.LastTransitionTime.Equal(&c.LastTransitionTime) {
				c.LastHeartbeatTime = o.LastHeartbeatTime
				break
			}
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		out = nil
	}
	s.machine.Status.Conditions = out
}

// ensureFinalizer adds the Machine finalizer and persists it at once.
func (r *Reconciler) ensureFinalizer(ctx context.Context, s *scope) error {
	if controllerutil.ContainsFinalizer(s.machine, v1alpha1.MachineFinalizer) {
		return nil
	}
	p := setup.NewPatcher(r.Control, s.original, setup.LockObject())
	obj := s.original.DeepCopy()
	controllerutil.AddFinalizer(obj, v1alpha1.MachineFinalizer)
	if err := p.Patch(ctx, obj); err != nil {
		return fmt.Errorf("adding finalizer: %w", err)
	}
	r.recordWrite(obj)
	// Both copies now start from the persisted object.
	status := s.machine.Status
	s.original = obj.DeepCopy()
	s.machine = obj.DeepCopy()
	s.machine.Status = status
	return nil
}

// removeFinalizer releases the Machine: once the finalizer is gone the API
// server deletes it, so nothing is written after this.
func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) error {
	if !controllerutil.ContainsFinalizer(s.original, v1alpha1.MachineFinalizer) {
		s.released = true
		return nil
	}
	p := setup.NewPatcher(r.Control, s.original, setup.LockObject())
	obj := s.original.DeepCopy()
	controllerutil.RemoveFinalizer(obj, v1alpha1.MachineFinalizer)
	if err := p.Patch(ctx, obj); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing finalizer: %w", err)
	}
	r.written.Forget(obj.UID)
	r.released.add(obj.UID)
	s.released = true
	return nil
}

// patch writes the Machine once at the end of a reconcile, through
// setup.Patcher: its metadata and spec (labels, annotations, finalizers,
// spec.providerID) if they changed, then its status if it changed. Nothing
// changed, nothing written. The metadata and spec patch is locked: a
// MachineSet may change the labels meanwhile, and a conflict retries the
// reconcile (setup.RequeueOnConflict) rather than dropping its change. The
// status is the controller's alone and goes unlocked.
func (r *Reconciler) patch(ctx context.Context, s *scope) error {
	if s.released {
		return nil
	}
	p := setup.NewPatcher(r.Control, s.original, setup.LockObject())
	err := p.Patch(ctx, s.machine)
	// s.machine holds the API server's answer to the last write that
	// succeeded, if any.
	if s.machine.ResourceVersion != s.original.ResourceVersion {
		r.recordWrite(s.machine)
	}
	if err != nil {
		if r.goneWhileDeleting(s, err) {
			return nil
		}
		return fmt.Errorf("patching machine: %w", err)
	}
	return nil
}

// goneWhileDeleting reports whether a write failed because the Machine, one
// being deleted, is gone: a reconcile that read it before the finalizer was
// removed (by an earlier reconcile whose write the cache did not show yet)
// has nothing left to record, so the write is done rather than an error to
// retry. The recorded version is forgotten with the Machine.
func (r *Reconciler) goneWhileDeleting(s *scope, err error) bool {
	if !apierrors.IsNotFound(err) || s.original.DeletionTimestamp == nil {
		return false
	}
	r.written.Forget(s.original.UID)
	s.log.V(1).Info("Machine already gone; nothing left to write")
	return true
}
