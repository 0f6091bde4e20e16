package machineset

import (
	"context"
	"fmt"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// syncTemplate is the phase that passes template changes on to the set's
// machines without replacing them (syncTemplateToMachines).
func (r *Reconciler) syncTemplate(ctx context.Context, s *scope) (phase.Result, error) {
	return phase.Result{}, r.syncTemplateToMachines(ctx, s.ms, s.machines)
}

// syncTemplateToMachines copies the parts of the template that MCM applies to
// existing machines without replacing them: the node template (labels,
// annotations and taints for the node), the machine configuration (timeouts,
// health settings) and the class kind. Everything else in the template only
// affects machines created from now on; a MachineDeployment rolls machines
// for those changes.
func (r *Reconciler) syncTemplateToMachines(ctx context.Context, ms *v1alpha1.MachineSet, machines []*v1alpha1.Machine) error {
	memo := r.templates.forSet(ms)
	defer memo.prune(machines)
	for i, m := range machines {
		if isTerminating(m) || memo.inSyncAt(m) {
			continue
		}
		updated, changed := withTemplateApplied(ms, m)
		if !changed {
			memo.inSync[m.UID] = m.Generation
			continue
		}
		if err := setup.NewPatcher(r.Client, m).Patch(ctx, updated); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("applying the template of %s to machine %s: %w", ms.Name, m.Name, err)
		}
		ctrl.LoggerFrom(ctx).V(1).Info("Applied node template and machine configuration", "machine", m.Name)
		machines[i] = updated
	}
	return nil
}

// withTemplateApplied returns a copy of the machine with the set's node
// template, machine configuration and class kind, and whether anything
// differed. The machine is only read (it is the cache's own object) and
// copied only when it differs: a set syncs after every change of any of its
// machines, and copying each of them every time cost most of a scale-up's
// CPU.
func withTemplateApplied(ms *v1alpha1.MachineSet, m *v1alpha1.Machine) (*v1alpha1.Machine, bool) {
	want := &ms.Spec.Template.Spec
	nodeTemplate := apiequality.Semantic.DeepEqual(want.NodeTemplateSpec, m.Spec.NodeTemplateSpec)
	configuration := sameConfiguration(want.MachineConfiguration, m.Spec.MachineConfiguration)
	kind := want.Class.Kind == m.Spec.Class.Kind
	if nodeTemplate && configuration && kind {
		return m, false
	}
	out := m.DeepCopy()
	if !nodeTemplate {
		out.Spec.NodeTemplateSpec = *want.NodeTemplateSpec.DeepCopy()
	}
	if !configuration {
		out.Spec.MachineConfiguration = want.MachineConfiguration.DeepCopy()
	}
	if !kind {
		out.Spec.Class.Kind = want.Class.Kind
	}
	return out, true
}

// sameConfiguration compares two inlined machine configurations, treating
// nil and an empty configuration alike: both mean "the controller's flags".
func sameConfiguration(a, b *v1alpha1.MachineConfiguration) bool {
	empty := v1alpha1.MachineConfiguration{}
	if a == nil {
		a = &empty
	}
	if b == nil {
		b = &empty
	}
	return apiequality.Semantic.DeepEqual(a, b)
}
