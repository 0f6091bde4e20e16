package mckubelet

import (
	"fmt"

	"sigs.k8s.io/yaml"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// poolKubeletConfig is the pool's base kubelet configuration: the last
// /etc/kubernetes/kubelet.conf (YAML or JSON) in merge order among the
// pool's MachineConfigs that no KubeletConfig generated (the template
// controller's 01-<pool>-kubelet, or the user's own). A pool without one
// is an error: a KubeletConfig is a change to a configuration, and writing
// a whole kubelet.conf from a fragment would lose what the node needs
// (clusterDNS, authentication, staticPodPath).
func poolKubeletConfig(pool string, fragments []mcfgv1.MachineConfig) (map[string]any, error) {
	var cfg map[string]any
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
	if cfg == nil {
		return nil, fmt.Errorf("pool %s has no base kubelet configuration: none of its MachineConfigs writes %s "+
			"(the template controller writes 01-%s-kubelet from the ControllerConfig)", pool, mcfgv1.KubeletConfigPath, pool)
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
