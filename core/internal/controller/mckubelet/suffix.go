package mckubelet

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// maxPerPool is how many KubeletConfigs may write MachineConfigs for one
// pool: the suffixes "" and 1 to 9, as in MCO.
const maxPerPool = 10

// generatedName is the MachineConfig a KubeletConfig with suffix writes for
// pool.
func generatedName(pool, suffix string) string {
	name := "99-" + pool + "-generated-kubelet"
	if suffix != "" {
		name += "-" + suffix
	}
	return name
}

// chooseSuffix is the lowest suffix, among "" and 1 to 9, that no other
// KubeletConfig selecting one of pools holds. Suffixes count per pool, as
// in MCO: the first KubeletConfig of pool infra writes
// 99-infra-generated-kubelet whatever other pools have. A KubeletConfig
// selecting several pools takes a suffix free in all of them.
func chooseSuffix(kc *mcfgv1.KubeletConfig, all []mcfgv1.KubeletConfig, pools []mcfgv1.MachineConfigPool) (string, error) {
	taken := map[string]bool{}
	for _, other := range all {
		if other.UID == kc.UID || !selectsAny(&other, pools) {
			continue
		}
		if s, ok := other.Annotations[mcfgv1.MCNameSuffixAnnotation]; ok {
			taken[s] = true
		}
	}
	for i := range maxPerPool {
		s := ""
		if i > 0 {
			s = strconv.Itoa(i)
		}
		if !taken[s] {
			return s, nil
		}
	}
	return "", fmt.Errorf("%d KubeletConfigs select its pools already; at most %d may write MachineConfigs for a pool", len(taken), maxPerPool)
}

// selectsAny reports a KubeletConfig whose pool selector selects one of
// pools.
func selectsAny(kc *mcfgv1.KubeletConfig, pools []mcfgv1.MachineConfigPool) bool {
	sel := kc.Spec.MachineConfigPoolSelector
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return false
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false
	}
	for _, p := range pools {
		if selector.Matches(labels.Set(p.Labels)) {
			return true
		}
	}
	return false
}
