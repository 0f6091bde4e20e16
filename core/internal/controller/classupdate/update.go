package classupdate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/driver"
	"github.com/machina-io/machina/core/internal/driverclass"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// update starts UpdateMachine for the machines of the class whose VM was
// made from other contents, while the class has fewer than
// Options.MaxConcurrent calls in flight, and records each answer when it
// comes (calls.go).
func (r *Reconciler) update(ctx context.Context, s *scope) (phase.Result, error) {
	if r.Gate != nil && r.Gate.Frozen() {
		s.log.V(1).Info("API server freeze: no class updates", "reason", r.Gate.Reason())
		return phase.Result{Stop: true}, nil
	}
	dc, err := r.Drivers.ForProvider(s.class.Provider)
	if err != nil {
		// No driver serves the class: its machines are left alone (the
		// class's own status says why).
		s.log.V(1).Info("No driver for the class; class updates wait", "reason", err.Error())
		return phase.Result{}, nil
	}
	if !dc.Has(driverv1alpha1.Capability_TYPE_UPDATE_MACHINE) {
		return phase.Result{}, nil
	}
	s.driver = dc

	now := time.Now()
	var pending []*v1alpha1.Machine
	var res phase.Result
	key := client.ObjectKeyFromObject(s.class)
	for _, m := range s.machines {
		if !needsUpdate(m, s.hash) {
			r.forgetHandled(string(m.UID), s.hash)
			continue
		}
		if r.calls.inFlight(key, m.UID) {
			continue
		}
		if r.handled(string(m.UID), s.hash) {
			// Answered already; the cache has not shown the record yet.
			continue
		}
		if at := r.waitingUntil(string(m.UID), s.hash, now); !at.IsZero() {
			res = res.Merge(phase.Result{RequeueAfter: at.Sub(now)})
			continue
		}
		pending = append(pending, m)
	}
	// Only this reconcile starts calls of the class (one worker per
	// class), so the count cannot grow before the calls below start.
	running := r.calls.count(key)
	free := r.Options.MaxConcurrent - running
	if len(pending) == 0 || free <= 0 {
		return res, nil
	}
	// By name: every reconcile takes the machines in the same order.
	slices.SortFunc(pending, func(a, b *v1alpha1.Machine) int { return strings.Compare(a.Name, b.Name) })
	starting := pending[:min(len(pending), free)]
	s.log.Info("Updating the VMs of machines to the class's contents", "classHash", s.hash,
		"starting", len(starting), "inFlight", running, "waiting", len(pending)-len(starting))
	for _, m := range starting {
		m = m.DeepCopy() // the cache's object; updateOne records on it
		r.calls.start(ctx, s.class, m.UID, func(ctx context.Context) { r.updateAndRemember(ctx, s, m) })
	}
	return res, nil
}

// updateAndRemember runs updateOne and remembers its outcome for the next
// reconciles: answered, or when to try again. An answer that could not be
// written is asked for again (UpdateMachine is idempotent): soon after a
// conflict, after the short period otherwise.
func (r *Reconciler) updateAndRemember(ctx context.Context, s *scope, m *v1alpha1.Machine) {
	uid := string(m.UID)
	retry, err := r.updateOne(ctx, s, m)
	switch {
	case err != nil && apierrors.IsConflict(err):
		s.log.V(1).Info("The machine changed while its class update was answered; asking again", "machine", m.Name)
		r.retryLater(uid, s.hash, time.Now().Add(setup.ConflictRetry))
	case err != nil:
		if ctx.Err() == nil {
			s.log.Error(err, "Recording the answer of UpdateMachine failed; asking again", "machine", m.Name)
		}
		r.retryLater(uid, s.hash, time.Now().Add(r.Options.ShortRetry))
	case retry > 0:
		r.retryLater(uid, s.hash, time.Now().Add(retry))
	default:
		r.markHandled(uid, s.hash)
	}
}

// needsUpdate reports whether m has a VM made from other contents than hash
// that the driver has not already refused to update to hash.
func needsUpdate(m *v1alpha1.Machine, hash string) bool {
	recorded := m.Annotations[v1alpha1.ClassHashAnnotation]
	return m.Spec.ProviderID != "" && recorded != "" && recorded != hash &&
		m.Annotations[v1alpha1.ClassHashNeedsNewVMAnnotation] != hash &&
		m.Status.CurrentStatus.Phase != v1alpha1.MachineTerminating &&
		m.Status.CurrentStatus.Phase != v1alpha1.MachineFailed
}

// updateOne calls UpdateMachine for one machine and records the answer. It
// returns how long to wait before trying again after a failure (0: do not
// retry for this hash), and an error only for a failure to write the answer.
func (r *Reconciler) updateOne(ctx context.Context, s *scope, m *v1alpha1.Machine) (time.Duration, error) {
	log := s.log.WithValues("machine", m.Name)
	ctx = logr.NewContext(ctx, log)
	old, err := r.loadSnapshot(ctx, s.class, m.Annotations[v1alpha1.ClassHashAnnotation])
	if err != nil {
		return 0, err
	}
	if old == nil {
		return 0, r.recordUnknownPrevious(ctx, s, m)
	}
	secrets, _, err := driverclass.Secrets(logr.NewContext(ctx, logr.Discard()), r.Client, s.class)
	if err != nil {
		var missing *driverclass.MissingSecretError
		if errors.As(err, &missing) {
			return r.Options.MediumRetry, r.recordFailure(ctx, s, m, codes.InvalidArgument,
				fmt.Sprintf("Secret %s of MachineClass %s not found", missing.Ref, s.class.Name))
		}
		return 0, err
	}
	resp, err := s.driver.UpdateMachine(ctx, &driverv1alpha1.UpdateMachineRequest{
		Machine:         machineMessage(m),
		OldMachineClass: driverclass.Message(old),
		MachineClass:    driverclass.Message(s.class),
		Secrets:         secrets,
		LastKnownState:  m.Status.LastKnownState,
	})
	if err != nil {
		code := driver.Code(err)
		return r.Options.retryAfter(code), r.recordFailure(ctx, s, m, code, status.Convert(err).Message())
	}
	switch {
	case resp.GetApplied() != nil:
		if got := resp.GetApplied().GetProviderId(); got != m.Spec.ProviderID {
			return r.Options.MediumRetry, r.recordFailure(ctx, s, m, codes.Internal,
				fmt.Sprintf("invalid response: applied.provider_id %q differs from the machine's %q", got, m.Spec.ProviderID))
		}
		return 0, r.recordApplied(ctx, s, m, resp.GetLastKnownState())
	case resp.GetNeedsNewVm() != nil:
		return 0, r.recordNeedsNewVM(ctx, s, m, resp.GetNeedsNewVm().GetReason())
	}
	return r.Options.MediumRetry, r.recordFailure(ctx, s, m, codes.Internal, "invalid response: neither applied nor needs_new_vm is set")
}

// machineMessage is the Driver API's Machine message for m.
func machineMessage(m *v1alpha1.Machine) *driverv1alpha1.Machine {
	msg := &driverv1alpha1.Machine{
		Name:        m.Name,
		Namespace:   m.Namespace,
		Uid:         string(m.UID),
		ProviderId:  m.Spec.ProviderID,
		Labels:      maps.Clone(m.Labels),
		Annotations: maps.Clone(m.Annotations),
	}
	nt := m.Spec.NodeTemplateSpec
	if len(nt.Labels) > 0 || len(nt.Annotations) > 0 || len(nt.Spec.Taints) > 0 {
		tmpl := &driverv1alpha1.NodeTemplate{Labels: maps.Clone(nt.Labels), Annotations: maps.Clone(nt.Annotations)}
		for _, t := range nt.Spec.Taints {
			tmpl.Taints = append(tmpl.Taints, &driverv1alpha1.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
		msg.NodeTemplate = tmpl
	}
	return msg
}

// shortHash is the part of a hash shown to humans.
func shortHash(h string) string {
	return h[:min(len(h), 12)]
}

// oneLine keeps a driver's message on one line, for conditions and events.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
