package machineset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/disruption"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// Event reasons, the ones a ReplicaSet uses for the same actions.
const (
	reasonSuccessfulCreate = "SuccessfulCreate"
	reasonFailedCreate     = "FailedCreate"
	reasonSuccessfulDelete = "SuccessfulDelete"
	reasonFailedDelete     = "FailedDelete"
)

// plan is what one sync does to the machines of a set.
type plan struct {
	// replace are Failed machines to delete; replacements are created in the
	// same sync.
	replace []*v1alpha1.Machine
	// scaleDown are the machines chosen to go because the set has too many.
	scaleDown []*v1alpha1.Machine
	// candidates are all the machines scaleDown was taken from, in
	// deletion order: the next ones stand in for a victim whose node asks
	// not to be disrupted (holds.go).
	candidates []*v1alpha1.Machine
	// held says why each candidate passed over waits, and short how many
	// of the surplus are kept for that.
	held  []string
	short int
	// create is how many machines to create.
	create int
	// frozen is set when machines are missing but the set is frozen.
	frozen bool
}

func (p plan) empty() bool { return len(p.replace) == 0 && len(p.scaleDown) == 0 && p.create == 0 }

// deletions returns every machine the plan deletes.
func (p plan) deletions() []*v1alpha1.Machine {
	return append(append([]*v1alpha1.Machine(nil), p.replace...), p.scaleDown...)
}

// computePlan decides, from the machines the set controls, which machines to
// delete and how many to create. Terminating machines do not count: they are
// already going. Failed machines that are not preserved are deleted and
// replaced. Preserved Failed machines are kept but do not count either: the
// set creates machines in their place, so that it never runs short of its
// replicas because of them (preserve.go). If more machines remain than wanted, the first ones in deletion
// order go; if fewer, new ones are created unless the set is frozen. The
// plan has no per-sync cap: executePlan bounds the requests in flight.
func computePlan(ms *v1alpha1.MachineSet, machines []*v1alpha1.Machine, now time.Time) plan {
	var p plan
	var remaining []*v1alpha1.Machine
	for _, m := range machines {
		switch {
		case isTerminating(m):
		case isFailed(m) && !isPreserved(m, now):
			p.replace = append(p.replace, m)
		case isFailed(m):
			// Preserved: kept, not counted.
		default:
			remaining = append(remaining, m)
		}
	}
	want := int(ms.Spec.Replicas)
	switch diff := len(remaining) - want; {
	case diff > 0:
		// A machine an in-place rollout just moved into the set carries the
		// marker update-result=successful until the deployment's next sync,
		// and the set's replicas grow to include it right after the move:
		// it is never surplus in the meantime.
		unmarked := slices.DeleteFunc(slices.Clone(remaining), justMovedInPlace)
		surplus := min(diff, len(unmarked)-want)
		if surplus > 0 {
			p.candidates = slices.Clone(unmarked)
			sortForDeletion(p.candidates, now)
			p.scaleDown = p.candidates[:surplus]
		}
	case diff < 0:
		if isFrozen(ms) {
			p.frozen = true
			return p
		}
		if scaleUpDisabled(ms) {
			// An old set of a running in-place rollout: its machines are
			// updated and moved, never replaced by new ones of the old
			// template.
			return p
		}
		p.create = -diff
	}
	return p
}

// scaleUpDisabled reports whether an in-place rollout labelled the set
// node.machine.sapcloud.io/scale-up-disabled=true: the set then creates no
// machines (deletions go on).
func scaleUpDisabled(ms *v1alpha1.MachineSet) bool {
	return ms.Labels[v1alpha1.LabelKeyMachineSetScaleUpDisabled] == "true"
}

// justMovedInPlace reports whether the machine carries the marker of a
// machine just moved to the set by an in-place rollout.
func justMovedInPlace(m *v1alpha1.Machine) bool {
	return m.Labels[v1alpha1.LabelKeyNodeUpdateResult] == v1alpha1.LabelValueNodeUpdateSuccessful
}

// isFrozen reports whether the safety controller froze the set; a set being
// deleted is never frozen.
func isFrozen(ms *v1alpha1.MachineSet) bool {
	return ms.Labels[v1alpha1.FreezeLabel] == v1alpha1.FreezeValue && ms.DeletionTimestamp == nil
}

// manageReplicas is the phase that brings the number of machines to the
// set's replicas: it plans the deletions and creations (computePlan) against
// a fresh list when the cache shows work to do (planReplicas), and executes
// the plan. A failed create or delete does not end the sync: the status
// reports it (ReplicaFailure) and the reconcile returns it after the write.
func (r *Reconciler) manageReplicas(ctx context.Context, s *scope) (phase.Result, error) {
	machines, p, err := r.planReplicas(ctx, s.ms, s.selector, s.machines)
	if err != nil {
		return phase.Result{}, err
	}
	if err := r.spareHeld(ctx, s.ms, &p); err != nil {
		return phase.Result{}, err
	}
	s.machines, s.plan = machines, p
	_, s.manageErr = r.executePlan(ctx, s.ms, p)
	if p.short > 0 {
		// Pods are not watched: look again.
		return phase.Result{RequeueAfter: disruption.Recheck}, nil
	}
	return phase.Result{}, nil
}

// planReplicas computes the plan from the cached machines and, if the plan
// would change anything, again from a fresh list and a fresh read of the
// set: the cache may not yet show machines this controller created or
// deleted a moment ago, annotations the MachineDeployment controller just
// set on the machines to delete, or replicas it just wrote.
func (r *Reconciler) planReplicas(ctx context.Context, ms *v1alpha1.MachineSet, selector labels.Selector, cached []*v1alpha1.Machine) ([]*v1alpha1.Machine, plan, error) {
	now := time.Now()
	p := computePlan(ms, cached, now)
	if p.empty() {
		return cached, p, nil
	}
	live := &v1alpha1.MachineList{}
	if err := r.APIReader.List(ctx, live, client.InNamespace(ms.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, plan{}, fmt.Errorf("listing machines: %w", err)
	}
	var owned []*v1alpha1.Machine
	for i := range live.Items {
		if ref := metav1.GetControllerOfNoCopy(&live.Items[i]); ref != nil && ref.UID == ms.UID {
			owned = append(owned, &live.Items[i])
		}
	}
	// The set is read again after its machines, so that the replicas are
	// at least as new as the list. A deployment that moves a machine in
	// place writes the set's new replicas first and takes the machine's
	// transfer marker off after: a fresh list without the marker beside a
	// cached set from before the scale-up would make the moved machine
	// surplus and delete it (and the set then create a VM in its place).
	fresh := &v1alpha1.MachineSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ms), fresh); err != nil {
		if apierrors.IsNotFound(err) {
			return owned, plan{}, nil
		}
		return nil, plan{}, fmt.Errorf("reading machine set: %w", err)
	}
	if fresh.UID != ms.UID {
		return owned, plan{}, nil
	}
	return owned, computePlan(fresh, owned, now), nil
}

// without returns machines minus the ones in drop.
func without(machines, drop []*v1alpha1.Machine) []*v1alpha1.Machine {
	if len(drop) == 0 {
		return machines
	}
	gone := make(map[string]bool, len(drop))
	for _, m := range drop {
		gone[m.Name] = true
	}
	var out []*v1alpha1.Machine
	for _, m := range machines {
		if !gone[m.Name] {
			out = append(out, m)
		}
	}
	return out
}

// executePlan deletes and creates machines as planned. Deletions run first so
// that a failed create does not keep a Failed machine around. Both go out
// concurrently in slow-start batches (slowStartBatch) of at most
// BurstReplicas requests in flight, deletions in the plan's order (Failed
// machines, then the scale-down's victims in deletion order); a batch with
// a failure ends that kind of request for this sync. The returned error
// reports the first failure of each kind; errCreate/errDelete tell which.
func (r *Reconciler) executePlan(ctx context.Context, ms *v1alpha1.MachineSet, p plan) (created int, err error) {
	log := ctrl.LoggerFrom(ctx)
	limit := r.Options.withDefaults().BurstReplicas
	var errs []error
	deletions := p.deletions()
	if _, err := slowStartBatch(len(deletions), limit, func(i int) error {
		m := deletions[i]
		if err := r.deleteMachine(ctx, ms, m); err != nil {
			return err
		}
		if i < len(p.replace) {
			log.Info("Deleted Failed machine to replace it", "machine", m.Name)
			staleMachinesRemoved.Inc()
			r.Recorder.Eventf(ms, m, corev1.EventTypeNormal, reasonSuccessfulDelete, "Delete", "Deleted Failed machine %s to replace it", m.Name)
		} else {
			log.Info("Deleted machine on scale-down", "machine", m.Name)
			r.Recorder.Eventf(ms, m, corev1.EventTypeNormal, reasonSuccessfulDelete, "Delete", "Deleted machine %s", m.Name)
		}
		return nil
	}); err != nil {
		errs = append(errs, err)
	}
	if p.frozen {
		// The safety controller reports the freeze (Frozen condition, events);
		// an event per sync here would only repeat it.
		log.V(1).Info("Machine set is frozen: not creating machines")
	}
	if p.create > 0 {
		n, err := slowStartBatch(p.create, limit, func(int) error { return r.createMachine(ctx, ms) })
		created = n
		if n > 0 {
			log.Info("Created machines", "count", n, "wanted", p.create)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return created, errors.Join(errs...)
}

// errCreate marks an error of a machine creation, errDelete of a deletion, so
// that the ReplicaFailure condition can name the failed action.
type (
	errCreate struct{ error }
	errDelete struct{ error }
)

func (e errCreate) Unwrap() error { return e.error }
func (e errDelete) Unwrap() error { return e.error }

// deleteMachine deletes one machine, with the UID as a precondition so that a
// machine re-created under the same name is not deleted by mistake. A machine
// already gone is fine.
func (r *Reconciler) deleteMachine(ctx context.Context, ms *v1alpha1.MachineSet, m *v1alpha1.Machine) error {
	err := r.Client.Delete(ctx, m, client.Preconditions{UID: &m.UID})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	r.Recorder.Eventf(ms, m, corev1.EventTypeWarning, reasonFailedDelete, "Delete", "Error deleting machine %s: %v", m.Name, err)
	return errDelete{fmt.Errorf("deleting machine %s: %w", m.Name, err)}
}

// createMachine creates one machine from the template, controlled by the set.
// A name collision with an existing machine is retried with a new name.
func (r *Reconciler) createMachine(ctx context.Context, ms *v1alpha1.MachineSet) error {
	const attempts = 3
	var err error
	for range attempts {
		m := newMachine(ms)
		m.Finalizers = append(m.Finalizers, r.Options.NewMachineFinalizers...)
		if err = controllerutil.SetControllerReference(ms, m, r.Client.Scheme()); err != nil {
			return errCreate{fmt.Errorf("creating machine for %s: %w", ms.Name, err)}
		}
		err = r.Client.Create(ctx, m)
		if err == nil {
			r.Recorder.Eventf(ms, m, corev1.EventTypeNormal, reasonSuccessfulCreate, "Create", "Created machine %s", m.Name)
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			break
		}
	}
	r.Recorder.Eventf(ms, nil, corev1.EventTypeWarning, reasonFailedCreate, "Create", "Error creating machine: %v", err)
	return errCreate{fmt.Errorf("creating machine for %s: %w", ms.Name, err)}
}

// newMachine builds a machine from the set's template: the template's labels
// and annotations, the template's spec, the name label of the owning
// MachineDeployment when the template does not set one (the machine
// controller finds a machine's deployment by that label), and the default
// deletion priority when the template sets none (which the machine
// controller would otherwise write once the VM exists).
func newMachine(ms *v1alpha1.MachineSet) *v1alpha1.Machine {
	tmpl := ms.Spec.Template.DeepCopy()
	labels := maps.Clone(tmpl.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if _, ok := labels[v1alpha1.MachineDeploymentNameLabel]; !ok {
		if owner := metav1.GetControllerOf(ms); owner != nil && owner.Kind == "MachineDeployment" {
			labels[v1alpha1.MachineDeploymentNameLabel] = owner.Name
		}
	}
	annotations := maps.Clone(tmpl.Annotations)
	annotations = withEffectiveCreationTimeout(ms, annotations)
	if _, ok := annotations[v1alpha1.MachinePriorityAnnotation]; !ok {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.MachinePriorityAnnotation] = v1alpha1.DefaultMachinePriority
	}
	return &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{
			Name:        newMachineName(ms.Name),
			Namespace:   ms.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: tmpl.Spec,
	}
}
