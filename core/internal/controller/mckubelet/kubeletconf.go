package mckubelet

import (
	"fmt"

	"sigs.k8s.io/yaml"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// defaultKubeletConfig is the pool's kubelet configuration when none of its
// MachineConfigs carries one: the kind and the fields the controller
// manages, with the kubelet's own defaults for everything else.
func defaultKubeletConfig() map[string]any {
	return map[string]any{
		"apiVersion":   kubeletAPIVersion,
		"kind":         kubeletKind,
		"cgroupDriver": "systemd",
		"failSwapOn":   true,
	}
}

// poolKubeletConfig is the kubelet configuration of the pool's
// MachineConfigs other than the generated ones: the last
// /etc/kubernetes/kubelet.conf in merge order (YAML or JSON), or
// defaultKubeletConfig.
func poolKubeletConfig(fragments []mcfgv1.MachineConfig) (map[string]any, error) {
	cfg := defaultKubeletConfig()
	for _, f := range fragments {
		ign, err := mcfgv1.ParseIgnition(f.Spec.Config.Raw)
		if err != nil {
			continue // the render controller reports it
		}
		for _, file := range ign.Storage.Files {
			if file.Path != mcfgv1.KubeletConfigPath {
				continue
			}
			data, err := file.Data()
			if err != nil {
				continue
			}
			var m map[string]any
			if err := yaml.Unmarshal(data, &m); err != nil || m == nil {
				return nil, fmt.Errorf("MachineConfig %s: %s is not a kubelet configuration (YAML or JSON)", f.Name, file.Path)
			}
			cfg = m
		}
	}
	return cfg, nil
}

// mergeConfig merges user over base: objects field by field, anything else
// (lists too) replaced, as MCO's mergo.Merge with override does.
func mergeConfig(base, user map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(user))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range user {
		bm, bok := out[k].(map[string]any)
		um, uok := v.(map[string]any)
		if bok && uok {
			out[k] = mergeConfig(bm, um)
			continue
		}
		out[k] = v
	}
	return out
}
