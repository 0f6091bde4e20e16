package mckubelet

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// refusedFields are the KubeletConfiguration fields a user may not set:
// the cluster depends on them, as MCO decides
// (pkg/controller/kubelet-config/helpers.go validateUserKubeletConfig in
// openshift/machine-config-operator).
var refusedFields = []string{"cgroupDriver", "clusterDNS", "clusterDomain", "featureGates", "failSwapOn", "swapBehavior"}

// kubeletAPIVersion and kubeletKind are what the kubelet configuration
// file declares.
const (
	kubeletAPIVersion = "kubelet.config.k8s.io/v1beta1"
	kubeletKind       = "KubeletConfiguration"
)

// userConfig reads and checks the KubeletConfig's kubeletConfig: a JSON
// object, of the kubelet's kind if it names one, without refused fields.
// A KubeletConfig without one only sets the log level.
func userConfig(kc *mcfgv1.KubeletConfig) (map[string]any, error) {
	if kc.Spec.KubeletConfig == nil || len(kc.Spec.KubeletConfig.Raw) == 0 {
		if kc.Spec.LogLevel == nil {
			return nil, fmt.Errorf("spec.kubeletConfig and spec.logLevel are both empty: nothing to apply")
		}
		return map[string]any{}, nil
	}
	var cfg map[string]any
	if err := json.Unmarshal(kc.Spec.KubeletConfig.Raw, &cfg); err != nil || cfg == nil {
		return nil, fmt.Errorf("spec.kubeletConfig is not a JSON object")
	}
	if v, ok := cfg["apiVersion"]; ok && v != kubeletAPIVersion {
		return nil, fmt.Errorf("spec.kubeletConfig.apiVersion is %v, want %s", v, kubeletAPIVersion)
	}
	if k, ok := cfg["kind"]; ok && k != kubeletKind {
		return nil, fmt.Errorf("spec.kubeletConfig.kind is %v, want %s", k, kubeletKind)
	}
	var refused []string
	for _, f := range refusedFields {
		if _, ok := cfg[f]; ok {
			refused = append(refused, f)
		}
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		return nil, fmt.Errorf("spec.kubeletConfig may not set %s: the controller manages them", strings.Join(refused, ", "))
	}
	return cfg, nil
}
