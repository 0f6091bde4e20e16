package mcfg

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// maxPerPool is how many KubeletConfigs (or ContainerRuntimeConfigs) may
// write MachineConfigs for one pool: the suffixes "" and 1 to 9, as in MCO.
const maxPerPool = 10

// SuffixClaim is a KubeletConfig's or ContainerRuntimeConfig's hold on a
// name suffix: the pools it selects and the suffix recorded in its
// mc-name-suffix annotation, if any.
type SuffixClaim struct {
	UID       types.UID
	Selector  *metav1.LabelSelector
	Suffix    string
	HasSuffix bool
}

// ChooseSuffix is the lowest suffix, among "" and 1 to 9, that no other
// claim selecting one of pools holds. Suffixes count per pool, as in MCO:
// the first of pool infra writes 99-infra-generated-…, whatever other pools
// have. One selecting several pools takes a suffix free in all of them.
func ChooseSuffix(self types.UID, claims []SuffixClaim, pools []mcv1.MachineConfigPool) (string, error) {
	taken := map[string]bool{}
	for _, c := range claims {
		if c.UID != self && c.HasSuffix && selectsAny(c.Selector, pools) {
			taken[c.Suffix] = true
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
	return "", fmt.Errorf("%d others select its pools already; at most %d may write MachineConfigs for a pool", len(taken), maxPerPool)
}

// selectsAny reports a pool selector that selects one of pools; an empty
// or invalid one selects none.
func selectsAny(sel *metav1.LabelSelector, pools []mcv1.MachineConfigPool) bool {
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
