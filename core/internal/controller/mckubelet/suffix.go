package mckubelet

import (
	"fmt"
	"strconv"

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

// chooseSuffix is the lowest suffix no other KubeletConfig holds, among
// "" and 1 to 9. Suffixes are global rather than per pool: simpler, and
// two KubeletConfigs selecting overlapping pools never share a name.
func chooseSuffix(kc *mcfgv1.KubeletConfig, all []mcfgv1.KubeletConfig) (string, error) {
	taken := map[string]bool{}
	for _, other := range all {
		if other.UID == kc.UID {
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
	return "", fmt.Errorf("%d KubeletConfigs exist already; at most %d may write MachineConfigs", len(taken), maxPerPool)
}
