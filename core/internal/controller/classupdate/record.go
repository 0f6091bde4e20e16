package classupdate

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// Reasons of the ClassUpdated condition and of the events on Machines.
const (
	// ReasonApplied: the driver applied the class's contents to the VM.
	ReasonApplied = "Applied"
	// ReasonNeedsNewVM: the driver cannot apply the contents to the running
	// VM, which it left untouched; a rollout must replace the machine.
	ReasonNeedsNewVM = v1alpha1.ClassUpdateReasonNeedsNewVM
	// ReasonUpdateFailed: UpdateMachine failed; it is tried again.
	ReasonUpdateFailed = "UpdateFailed"
	// ReasonPreviousClassUnknown: no snapshot of the contents the VM was made
	// from is left, so the driver cannot be told what the VM has.
	ReasonPreviousClassUnknown = "PreviousClassUnknown"
)

// actionUpdate is the action of the controller's events.
const actionUpdate = "UpdateMachine"

// recordApplied moves the machine to the class's current hash.
func (r *Reconciler) recordApplied(ctx context.Context, s *scope, m *v1alpha1.Machine, lastKnownState string) error {
	msg := fmt.Sprintf("The VM was updated to the contents %s of MachineClass %s", shortHash(s.hash), s.class.Name)
	if err := r.writeStatus(ctx, m, metav1.ConditionTrue, ReasonApplied, msg, lastKnownState); err != nil {
		return err
	}
	if err := r.writeAnnotations(ctx, m, s.hash, ""); err != nil {
		return err
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, "ClassUpdated", actionUpdate, "%s", msg)
	s.log.Info("Updated the VM to the class's contents", "machine", m.Name, "classHash", s.hash)
	return nil
}

// recordNeedsNewVM leaves the machine at its old hash, for the rollout path.
func (r *Reconciler) recordNeedsNewVM(ctx context.Context, s *scope, m *v1alpha1.Machine, reason string) error {
	msg := fmt.Sprintf("The driver cannot apply the contents %s of MachineClass %s to the running VM (%s); the VM is unchanged until a rollout replaces the machine",
		shortHash(s.hash), s.class.Name, oneLine(reason))
	if err := r.writeStatus(ctx, m, metav1.ConditionFalse, ReasonNeedsNewVM, msg, ""); err != nil {
		return err
	}
	if err := r.writeAnnotations(ctx, m, "", s.hash); err != nil {
		return err
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, "ClassUpdateNeedsNewVM", actionUpdate, "%s", msg)
	s.log.Info("The driver needs a new VM for the class's contents", "machine", m.Name, "classHash", s.hash, "reason", oneLine(reason))
	return nil
}

// recordUnknownPrevious leaves the machine at its old hash when the contents
// it was made from are not known any more; it is not tried again for this
// hash.
func (r *Reconciler) recordUnknownPrevious(ctx context.Context, s *scope, m *v1alpha1.Machine) error {
	msg := fmt.Sprintf("No snapshot of the class contents %s the VM was made from is left; the VM is not updated to the contents %s of MachineClass %s until a rollout replaces the machine",
		shortHash(m.Annotations[v1alpha1.ClassHashAnnotation]), shortHash(s.hash), s.class.Name)
	if err := r.writeStatus(ctx, m, metav1.ConditionFalse, ReasonPreviousClassUnknown, msg, ""); err != nil {
		return err
	}
	if err := r.writeAnnotations(ctx, m, "", s.hash); err != nil {
		return err
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, "ClassUpdateSkipped", actionUpdate, "%s", msg)
	return nil
}

// recordFailure records a failed call; the caller schedules the retry.
func (r *Reconciler) recordFailure(ctx context.Context, s *scope, m *v1alpha1.Machine, code codes.Code, driverMsg string) error {
	msg := fmt.Sprintf("UpdateMachine to the contents %s of MachineClass %s failed: %s: %s", shortHash(s.hash), s.class.Name, code.String(), oneLine(driverMsg))
	if err := r.writeStatus(ctx, m, metav1.ConditionFalse, ReasonUpdateFailed, msg, ""); err != nil {
		return err
	}
	r.Recorder.Eventf(m, nil, corev1.EventTypeWarning, "ClassUpdateFailed", actionUpdate, "%s", msg)
	s.log.Info("UpdateMachine failed", "machine", m.Name, "classHash", s.hash, "code", code.String(), "message", oneLine(driverMsg))
	return nil
}

// writeStatus sets the ClassUpdated condition (and the driver's
// last_known_state when it sent one). The patch carries the machine's
// resourceVersion: the Machine controller writes the same status, and a
// merge patch replaces the condition list whole. A conflict (the machine
// changed since the copy the call was made from) is written again on a
// fresh read, while the machine still has the VM the answer is about: the
// driver is not asked again for an answer it gave.
func (r *Reconciler) writeStatus(ctx context.Context, m *v1alpha1.Machine, st metav1.ConditionStatus, reason, msg, lastKnownState string) error {
	vm, made := m.Spec.ProviderID, m.Annotations[v1alpha1.ClassHashAnnotation]
	fresh := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if fresh {
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
				return err
			}
			if m.Spec.ProviderID != vm || m.Annotations[v1alpha1.ClassHashAnnotation] != made {
				return fmt.Errorf("machine %s has another VM or contents than the answer is about", m.Name)
			}
		}
		fresh = true
		return r.patchCondition(ctx, m, st, reason, msg, lastKnownState)
	})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("writing the ClassUpdated condition of machine %s: %w", m.Name, err)
	}
	return nil
}

// patchCondition writes the ClassUpdated condition on m, if it changes.
func (r *Reconciler) patchCondition(ctx context.Context, m *v1alpha1.Machine, st metav1.ConditionStatus, reason, msg, lastKnownState string) error {
	p := setup.NewPatcher(r.Client, m, setup.LockStatus())
	changed := meta.SetStatusCondition(&m.Status.MachineConditions, metav1.Condition{
		Type: v1alpha1.MachineConditionClassUpdated, Status: st, Reason: reason, Message: msg,
	})
	if lastKnownState != "" && lastKnownState != m.Status.LastKnownState {
		m.Status.LastKnownState = lastKnownState
		changed = true
	}
	if !changed {
		return nil
	}
	return p.Patch(ctx, m)
}

// writeAnnotations records the hash the VM now has (when set) and the hash
// the driver refused (set, or cleared when empty).
func (r *Reconciler) writeAnnotations(ctx context.Context, m *v1alpha1.Machine, hash, refused string) error {
	p := setup.NewPatcher(r.Client, m)
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	if hash != "" {
		m.Annotations[v1alpha1.ClassHashAnnotation] = hash
	}
	if refused != "" {
		m.Annotations[v1alpha1.ClassHashNeedsNewVMAnnotation] = refused
	} else {
		delete(m.Annotations, v1alpha1.ClassHashNeedsNewVMAnnotation)
	}
	if err := p.Patch(ctx, m); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("recording the class hash of machine %s: %w", m.Name, err)
	}
	return nil
}
