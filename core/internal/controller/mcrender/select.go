package mcrender

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/mcfg"
)

// Reasons of RenderDegraded.
const (
	reasonNoSelector  = "NoMachineConfigSelector"
	reasonBadSelector = "InvalidMachineConfigSelector"
	reasonNoFragments = "NoMachineConfigs"
	reasonBadFragment = "InvalidMachineConfig"
	reasonRendered    = "Rendered"
	// reasonFIPSChange: the rendering would change FIPS mode on running
	// nodes (refuse.go).
	reasonFIPSChange = "FIPSChange"
	// reasonArch: the rendering's kernel does not run on a node of the pool
	// (refuse.go).
	reasonArch = "UnsupportedArchitecture"
	// reasonTooLarge: the rendering is larger than a MachineConfig may be
	// (mcfgv1.MaxRenderedSize).
	reasonTooLarge = "RenderedConfigTooLarge"
)

// selectFragments lists the pool's MachineConfigs (its
// machineConfigSelector's, leaving out rendered ones) in merge order. A
// pool without a selector, or whose selector selects nothing, cannot be
// rendered.
func (r *Reconciler) selectFragments(ctx context.Context, s *scope) (phase.Result, error) {
	sel := s.pool.Spec.MachineConfigSelector
	if sel == nil {
		s.fail(reasonNoSelector, "spec.machineConfigSelector is not set: the pool selects no MachineConfig")
		return phase.Result{Stop: true}, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		s.fail(reasonBadSelector, fmt.Sprintf("spec.machineConfigSelector: %v", err))
		return phase.Result{Stop: true}, nil
	}
	list := &mcfgv1.MachineConfigList{}
	if err := r.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return phase.Result{}, fmt.Errorf("listing MachineConfigs: %w", err)
	}
	for _, mc := range list.Items {
		if !mcfg.IsRendered(&mc) && mc.DeletionTimestamp.IsZero() {
			s.fragments = append(s.fragments, mc)
		}
	}
	if len(s.fragments) == 0 {
		s.fail(reasonNoFragments, fmt.Sprintf("no MachineConfig matches spec.machineConfigSelector %s", selector))
		return phase.Result{Stop: true}, nil
	}
	mcfg.SortFragments(s.fragments)
	return phase.Result{}, nil
}

// render merges the fragments and names the result. A fragment that
// cannot be merged fails the render: the pool keeps its target.
func (r *Reconciler) render(_ context.Context, s *scope) (phase.Result, error) {
	out, err := merge(s.fragments)
	if err != nil {
		s.fail(reasonBadFragment, err.Error())
		return phase.Result{Stop: true}, nil
	}
	name, err := renderedName(s.pool.Name, &out.spec)
	if err != nil {
		return phase.Result{}, err
	}
	s.rendered, s.name = out, name
	return phase.Result{}, nil
}

// fail records why the pool cannot be rendered.
func (s *scope) fail(reason, message string) {
	s.failureReason, s.failure = reason, message
}
