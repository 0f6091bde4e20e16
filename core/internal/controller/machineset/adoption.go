package machineset

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// claimMachines is the phase that gathers the machines the set controls
// into the scope (ownedMachines).
func (r *Reconciler) claimMachines(ctx context.Context, s *scope) (phase.Result, error) {
	machines, err := r.ownedMachines(ctx, s.ms, s.selector)
	if err != nil {
		return phase.Result{}, err
	}
	s.machines = machines
	return phase.Result{}, nil
}

// ownedMachines reads from the cache the machines the set may claim: those
// it controls (candidates for release) and the orphans its selector matches
// (candidates for adoption), and claims them. The lists are not deep-copied:
// a set syncs after most machine changes, and copying every machine each
// time was most of the controller's CPU. The returned machines are the
// cache's own objects and must be copied before they are changed.
func (r *Reconciler) ownedMachines(ctx context.Context, ms *v1alpha1.MachineSet, selector labels.Selector) ([]*v1alpha1.Machine, error) {
	cached := r.Clients.Machines()
	all, err := cached.ByField(ctx, ms.Namespace, setup.MachineControllerIndex, string(ms.UID))
	if err != nil {
		return nil, fmt.Errorf("listing machines: %w", err)
	}
	orphans, err := cached.ByField(ctx, ms.Namespace, setup.MachineControllerIndex, setup.Orphan)
	if err != nil {
		return nil, fmt.Errorf("listing machines: %w", err)
	}
	for _, m := range orphans {
		if selector.Matches(labels.Set(m.Labels)) {
			all = append(all, m)
		}
	}
	return r.claimOwned(ctx, ms, selector, all)
}

// claimOwned returns the machines the set controls, after reconciling
// controller references the way a ReplicaSet does with pods: an orphan that
// matches the selector is adopted, a machine the set controls that no longer
// matches is released. Machines controlled by someone else are left alone.
func (r *Reconciler) claimOwned(ctx context.Context, ms *v1alpha1.MachineSet, selector labels.Selector, all []*v1alpha1.Machine) ([]*v1alpha1.Machine, error) {
	log := ctrl.LoggerFrom(ctx)
	var (
		owned    []*v1alpha1.Machine
		canAdopt *bool
	)
	// mayAdopt re-reads the set from the API server once, right before the
	// first adoption: a set that is being deleted, or was replaced by a new
	// object with the same name, must not take machines (kubernetes#42639).
	mayAdopt := func() bool {
		if canAdopt == nil {
			ok := r.freshSetStillLive(ctx, ms)
			canAdopt = &ok
		}
		return *canAdopt
	}

	for _, m := range all {
		ref := metav1.GetControllerOfNoCopy(m)
		matches := selector.Matches(labels.Set(m.Labels))
		switch {
		case ref != nil && ref.UID == ms.UID:
			if matches || ms.DeletionTimestamp != nil {
				owned = append(owned, m)
				continue
			}
			if err := r.release(ctx, ms, m); err != nil {
				return nil, err
			}
			log.V(1).Info("Released machine that no longer matches the selector", "machine", m.Name)
		case ref != nil:
			// Controlled by another object.
		case !matches || m.DeletionTimestamp != nil || ms.DeletionTimestamp != nil:
			// An orphan this set does not want.
		default:
			if !mayAdopt() {
				continue
			}
			adopted, err := r.adopt(ctx, ms, m)
			if err != nil {
				return nil, err
			}
			if adopted != nil {
				log.Info("Adopted orphan machine", "machine", m.Name)
				owned = append(owned, adopted)
			}
		}
	}
	return owned, nil
}

// freshSetStillLive reports whether an uncached read returns the same set,
// not being deleted.
func (r *Reconciler) freshSetStillLive(ctx context.Context, ms *v1alpha1.MachineSet) bool {
	fresh := &v1alpha1.MachineSet{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ms), fresh); err != nil {
		return false
	}
	return fresh.UID == ms.UID && fresh.DeletionTimestamp == nil
}

// adopt makes the set the machine's controller. The patch carries the
// machine's resourceVersion, so that it fails rather than overwrite a
// controller reference another set wrote meanwhile; such a machine is simply
// not adopted now (nil, nil).
func (r *Reconciler) adopt(ctx context.Context, ms *v1alpha1.MachineSet, m *v1alpha1.Machine) (*v1alpha1.Machine, error) {
	patched := m.DeepCopy()
	if err := controllerutil.SetControllerReference(ms, patched, r.Client.Scheme()); err != nil {
		return nil, fmt.Errorf("adopting machine %s: %w", m.Name, err)
	}
	err := setup.NewPatcher(r.Client, m, setup.LockObject()).Patch(ctx, patched)
	switch {
	case err == nil:
		return patched, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil, nil
	default:
		return nil, fmt.Errorf("adopting machine %s: %w", m.Name, err)
	}
}

// release removes the set's controller reference from the machine.
func (r *Reconciler) release(ctx context.Context, ms *v1alpha1.MachineSet, m *v1alpha1.Machine) error {
	patched := m.DeepCopy()
	if err := controllerutil.RemoveControllerReference(ms, patched, r.Client.Scheme()); err != nil {
		return fmt.Errorf("releasing machine %s: %w", m.Name, err)
	}
	err := setup.NewPatcher(r.Client, m, setup.LockObject()).Patch(ctx, patched)
	// A conflict (the machine changed meanwhile) is retried soon by the
	// conflict policy (Reconcile).
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("releasing machine %s: %w", m.Name, err)
	}
	return nil
}
