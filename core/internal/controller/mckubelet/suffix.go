package mckubelet

import (
	"context"
	"fmt"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/mcfg"
)

// generatedName is the MachineConfig a KubeletConfig with suffix writes for
// pool.
func generatedName(pool, suffix string) string {
	name := "99-" + pool + "-generated-kubelet"
	if suffix != "" {
		name += "-" + suffix
	}
	return name
}

// chooseSuffix is the lowest suffix free in every pool of pools
// (mcfg.ChooseSuffix: suffixes count per pool, as in MCO).
func chooseSuffix(kc *mcfgv1.KubeletConfig, all []mcfgv1.KubeletConfig, pools []mcfgv1.MachineConfigPool) (string, error) {
	claims := make([]mcfg.SuffixClaim, 0, len(all))
	for _, o := range all {
		s, ok := o.Annotations[mcfgv1.MCNameSuffixAnnotation]
		claims = append(claims, mcfg.SuffixClaim{UID: o.UID, Selector: o.Spec.MachineConfigPoolSelector, Suffix: s, HasSuffix: ok})
	}
	s, err := mcfg.ChooseSuffix(kc.UID, claims, pools)
	if err != nil {
		return "", fmt.Errorf("KubeletConfigs: %w", err)
	}
	return s, nil
}

// claimSuffix is the phase that gives the KubeletConfig its name suffix
// (suffix), once.
func (r *Reconciler) claimSuffix(ctx context.Context, s *scope) (phase.Result, error) {
	suffix, failure, err := r.suffix(ctx, s.kc, s.pools)
	if err != nil {
		return phase.Result{}, err
	}
	if failure != "" {
		return s.fail(failure)
	}
	s.suffix = suffix
	return phase.Result{}, nil
}
