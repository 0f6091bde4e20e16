package machineset

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// Preservation on the set's side (the machine controller does the rest,
// core/internal/controller/machine/machine_preserve.go):
//
//   - A preserved Failed machine is neither replaced nor counted as a
//     replica: the set creates a machine in its place (computePlan) and
//     reports it in status.preservedFailedReplicas. Once its preservation
//     ends it is deleted as any Failed machine.
//   - Automatic preservation (MCM's triggerAutoPreservationOfFailedMachines,
//     machine-controller-manager pkg/controller/machineset_util.go): while
//     fewer than spec.autoPreserveFailedMachineMax machines of the set carry
//     preserve=auto-preserved, Failed machines without a preserve value of
//     their own get it, the newest first; when more carry it than allowed
//     (the maximum was lowered), it is taken from the oldest first.
//     status.autoPreserveFailedMachineCount is how many carry it.

// Event reasons of automatic preservation.
const (
	reasonAutoPreserved          = "AutoPreserved"
	reasonAutoPreservationDone   = "AutoPreservationRemoved"
	reasonAutoPreservationFailed = "AutoPreservationFailed"
)

// userPreserveValues are the values a user sets; a machine carrying one (or
// whose Node's value is in force) is never preserved automatically.
var userPreserveValues = map[string]bool{
	v1alpha1.PreserveValueNow:        true,
	v1alpha1.PreserveValueWhenFailed: true,
	v1alpha1.PreserveValueFalse:      true,
}

// autoPreserve is the phase that keeps the number of automatically
// preserved machines at spec.autoPreserveFailedMachineMax. It annotates
// (or un-annotates) machines and updates s.machines with the written
// copies, so that the plan after it sees them.
func (r *Reconciler) autoPreserve(ctx context.Context, s *scope) (phase.Result, error) {
	limit := 0
	if p := s.ms.Spec.AutoPreserveFailedMachineMax; p != nil {
		limit = int(*p)
	}
	var marked, candidates []*v1alpha1.Machine
	for _, m := range s.machines {
		switch {
		case isTerminating(m):
		case m.Annotations[v1alpha1.PreserveAnnotation] == v1alpha1.PreserveValueAutoPreserved:
			marked = append(marked, m)
		case autoPreserveCandidate(m):
			candidates = append(candidates, m)
		}
	}
	newestFirst := func(a, b *v1alpha1.Machine) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return compareNames(a, b)
	}
	var changes []*v1alpha1.Machine
	var values []string
	if excess := len(marked) - limit; excess > 0 {
		slices.SortFunc(marked, newestFirst)
		for _, m := range marked[len(marked)-excess:] {
			changes, values = append(changes, m), append(values, "")
		}
	} else if room := -excess; room > 0 && len(candidates) > 0 {
		slices.SortFunc(candidates, newestFirst)
		for _, m := range candidates[:min(room, len(candidates))] {
			changes, values = append(changes, m), append(values, v1alpha1.PreserveValueAutoPreserved)
		}
	}
	for i, m := range changes {
		written, err := r.setPreserveAnnotation(ctx, m, values[i])
		if err != nil {
			r.Recorder.Eventf(s.ms, m, corev1.EventTypeWarning, reasonAutoPreservationFailed, "Preserve", "Error marking machine %s for automatic preservation: %v", m.Name, err)
			return phase.Result{}, err
		}
		s.replaceMachine(written)
		if values[i] == "" {
			s.log.Info("Removed automatic preservation: more machines preserved than autoPreserveFailedMachineMax", "machine", m.Name)
			r.Recorder.Eventf(s.ms, m, corev1.EventTypeNormal, reasonAutoPreservationDone, "Preserve", "Machine %s is no longer preserved automatically (autoPreserveFailedMachineMax %d)", m.Name, limit)
		} else {
			s.log.Info("Marked Failed machine for automatic preservation", "machine", m.Name)
			r.Recorder.Eventf(s.ms, m, corev1.EventTypeNormal, reasonAutoPreserved, "Preserve", "Failed machine %s preserved automatically (autoPreserveFailedMachineMax %d)", m.Name, limit)
		}
	}
	return phase.Result{}, nil
}

// autoPreserveCandidate reports whether a Failed machine may be preserved
// automatically: it has no preserve value of its own, its Node's value is
// not in force (last-applied-node-preserve-value), it is not preserved
// already, and this failure was not preserved before (a Preserved
// condition that changed since the machine failed: the preservation of
// this failure ended, and must not start again).
func autoPreserveCandidate(m *v1alpha1.Machine) bool {
	if !isFailed(m) || userPreserveValues[m.Annotations[v1alpha1.PreserveAnnotation]] ||
		m.Annotations[v1alpha1.LastAppliedNodePreserveValueAnnotation] != "" ||
		m.Status.CurrentStatus.PreserveExpiryTime != nil {
		return false
	}
	failedSince := m.Status.CurrentStatus.LastUpdateTime.Time
	for _, c := range m.Status.Conditions {
		if c.Type == v1alpha1.NodePreserved && !c.LastTransitionTime.Time.Before(failedSince) {
			return false
		}
	}
	return true
}

// setPreserveAnnotation sets (value "") removes the preserve annotation of
// a machine with a merge patch and returns the written machine.
func (r *Reconciler) setPreserveAnnotation(ctx context.Context, m *v1alpha1.Machine, value string) (*v1alpha1.Machine, error) {
	written := m.DeepCopy()
	if value == "" {
		delete(written.Annotations, v1alpha1.PreserveAnnotation)
	} else {
		if written.Annotations == nil {
			written.Annotations = map[string]string{}
		}
		written.Annotations[v1alpha1.PreserveAnnotation] = value
	}
	// Locked: a user may have set a value of their own meanwhile.
	// A conflict is retried soon by the conflict policy (Reconcile).
	if err := setup.NewPatcher(r.Client, m, setup.LockObject()).Patch(ctx, written); err != nil {
		return nil, fmt.Errorf("annotating machine %s: %w", m.Name, err)
	}
	return written, nil
}

// replaceMachine puts the written copy of a machine in place of the one
// read.
func (s *scope) replaceMachine(written *v1alpha1.Machine) {
	for i, m := range s.machines {
		if m.UID == written.UID {
			s.machines[i] = written
			return
		}
	}
}

func compareNames(a, b *v1alpha1.Machine) int {
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}
