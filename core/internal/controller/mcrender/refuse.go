package mcrender

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/mcfg"
)

// archLabel is the Node label naming its CPU architecture, set by the
// kubelet.
const archLabel = corev1.LabelArchStable

// refuse stops a rendering that MCO refuses for what it would do to the
// pool's nodes rather than for what one fragment says:
//
//   - a day-2 FIPS change: the rendering's fips differs from that of the
//     pool's target (FIPS mode is chosen when a node is installed; MCO's
//     render controller finds such a rendering unreconcilable with the
//     target). A pool without a target yet may set it;
//   - the 64k-pages kernel on a pool with a node that is not arm64 (its
//     kubernetes.io/arch label, none counting as not arm64): MCO's daemon
//     degrades such a node; machina refuses the rendering and names the
//     nodes.
//
// The pool keeps its target, and RenderDegraded names the MachineConfig and
// the field.
func (r *Reconciler) refuse(ctx context.Context, s *scope) (phase.Result, error) {
	for _, check := range []func(context.Context, *scope) (string, string, error){r.fipsChange, r.kernelOffArch} {
		reason, message, err := check(ctx, s)
		if err != nil {
			return phase.Result{}, err
		}
		if reason != "" {
			s.fail(reason, message)
			return phase.Result{Stop: true}, nil
		}
	}
	return phase.Result{}, nil
}

// fipsChange refuses a rendering whose fips differs from the pool's target.
func (r *Reconciler) fipsChange(ctx context.Context, s *scope) (string, string, error) {
	target := s.pool.Spec.Configuration.Name
	if target == "" || target == s.name {
		return "", "", nil
	}
	current := &mcfgv1.MachineConfig{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: target}, current); err != nil {
		if apierrors.IsNotFound(err) {
			// Deleted by hand (the collector never deletes a target): nothing
			// to compare with; the pool's nodes still tell the agent what runs.
			s.log.Info("The pool's target is gone; FIPS mode not compared", "target", target)
			return "", "", nil
		}
		return "", "", fmt.Errorf("reading the pool's target %s: %w", target, err)
	}
	if current.Spec.FIPS == s.rendered.spec.FIPS {
		return "", "", nil
	}
	if s.rendered.spec.FIPS {
		return reasonFIPSChange, fmt.Sprintf("MachineConfig %s: spec.fips: FIPS mode cannot be turned on for a pool whose nodes run without it "+
			"(its target %s has fips: false); FIPS mode is chosen when a node is installed", s.rendered.fipsFrom, target), nil
	}
	return reasonFIPSChange, fmt.Sprintf("MachineConfig %s (the pool's target): spec.fips is true, but no MachineConfig of the pool "+
		"sets it any more; FIPS mode cannot be turned off on nodes that run with it; FIPS mode is chosen when a node is installed", target), nil
}

// kernelOffArch refuses the 64k-pages kernel for a pool with a node that
// is not arm64.
func (r *Reconciler) kernelOffArch(ctx context.Context, s *scope) (string, string, error) {
	if s.rendered.spec.KernelType != kernel64kPages {
		return "", "", nil
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return "", "", fmt.Errorf("listing nodes: %w", err)
	}
	pools := &mcfgv1.MachineConfigPoolList{}
	if err := r.Client.List(ctx, pools); err != nil {
		return "", "", fmt.Errorf("listing pools: %w", err)
	}
	// The nodes the pool drives: a node whose primary pool is another
	// never runs this rendering.
	chosen, _, _, err := mcfg.DrivenNodes(ctx, r.Control, pools.Items, s.pool, nodes.Items)
	if err != nil {
		return "", "", err
	}
	byName := make(map[string]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	var off []string
	for _, name := range chosen {
		switch arch, ok := byName[name].Labels[archLabel]; {
		case !ok:
			off = append(off, fmt.Sprintf("node %s has no %s label", name, archLabel))
		case arch != "arm64":
			off = append(off, fmt.Sprintf("node %s is %s", name, arch))
		}
	}
	if len(off) == 0 {
		return "", "", nil
	}
	return reasonArch, fmt.Sprintf("MachineConfig %s: spec.kernelType: 64k-pages runs on arm64 nodes only, but %s",
		s.rendered.kernelTypeFrom, strings.Join(off, ", ")), nil
}
