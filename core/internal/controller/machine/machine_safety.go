package machine

import (
	"context"
	"fmt"
	"time"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/freeze"
)

// Event reasons of the safety hooks.
const (
	reasonReplacementHeld = "ReplacementLimited"
)

// holdWhileFrozen tells whether a health decision (failing a machine by
// its health or creation timeout) must wait because the freeze gate is
// closed: while an API server is unreachable, a Node that looks unhealthy
// may only be unreachable, and failing its machine would replace healthy
// capacity. The machine keeps its phase and is looked at again when the
// gate opens (UnfreezeSource) or, as a safety net, after freeze.Recheck.
// Nothing is written: the API server may be the thing that is down.
//
// After an outage the gate holds the decision for a grace period as long
// as the outage: Nodes that could not report during it need about as long
// to settle, and their state from during the outage says nothing about
// the machines.
func (r *Reconciler) holdWhileFrozen(s *scope, decision string) (phase.Result, bool) {
	if !r.Gate.HoldsTimeouts(s.now) {
		return phase.Result{}, false
	}
	if !r.Gate.Frozen() {
		until := r.Gate.GraceUntil()
		s.log.V(1).Info("Grace period after an API server outage; not "+decision, "until", until)
		return phase.Result{RequeueAfter: min(until.Sub(s.now)+time.Second, freeze.Recheck)}, true
	}
	s.log.V(1).Info("Machine controller frozen; not "+decision, "reason", r.Gate.Reason())
	return phase.Result{RequeueAfter: freeze.Recheck}, true
}

// admitReplacement asks the meltdown guard whether the machine, unhealthy
// for longer than its health timeout, may become Failed now. When the
// machine's MachineDeployment already has as many machines being replaced
// as --machine-max-replacements (or its annotation) allows, the machine
// stays Unknown, the reason is recorded in lastOperation (with an event
// when it is new), and the machine is asked about again after
// Options.ReplacementRecheck. An admitted machine holds a permit that
// Reconcile gives back if the Failed phase cannot be written.
func (r *Reconciler) admitReplacement(ctx context.Context, s *scope, why string) (phase.Result, bool, error) {
	if r.Meltdown == nil {
		return phase.Result{}, false, nil
	}
	d, err := r.Meltdown.Admit(ctx, s.machine)
	if err != nil {
		return phase.Result{}, true, fmt.Errorf("meltdown protection: %w", err)
	}
	if d.Warning != nil {
		s.log.Info("Malformed replacement limit on the MachineDeployment; the default applies", "machineDeployment", d.Deployment, "problem", d.Warning.Error())
	}
	if d.Allowed {
		s.permitHeld = true
		return phase.Result{}, false, nil
	}
	m := s.machine
	// The text stays the same while the machine waits (the observed count
	// goes to the log only), so that the event is emitted once.
	desc := fmt.Sprintf("Machine has been unhealthy for longer than the health timeout of %s (%s), but MachineDeployment %s already has its limit of %d machines being replaced (--machine-max-replacements); it stays Unknown until one of them is done",
		r.healthTimeout(s), why, d.Deployment, d.Limit)
	prev := m.Status.LastOperation.Description
	setLastOperation(s, v1alpha1.MachineOperationHealthCheck, v1alpha1.MachineStateProcessing, "", desc)
	if prev != desc {
		r.warning(s, reasonReplacementHeld, actionHealthCheck, "%s", desc)
		s.log.Info("Replacement limit reached; machine stays Unknown", "machineDeployment", d.Deployment, "limit", d.Limit, "inProgress", d.InProgress)
	}
	return phase.Result{RequeueAfter: r.Options.ReplacementRecheck}, true, nil
}

// releasePermit gives back the meltdown permit the machine may hold: when
// it is healthy again, or its Failed phase could not be written. A machine
// the cache shows Failed, deleting or gone loses its permit in the guard.
func (r *Reconciler) releasePermit(m *v1alpha1.Machine) {
	if r.Meltdown != nil {
		r.Meltdown.Release(m)
	}
}
