package mcruntime

import (
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// dropinDir is CRI-O's drop-in directory; it reads its files in name
// order over /etc/crio/crio.conf.
const dropinDir = "/etc/crio/crio.conf.d/"

// dropin is one CRI-O drop-in: MCO writes one file per field,
// 01-ctrcfg-<field>, so a later MachineConfig setting the same field
// replaces the file and one setting another field adds its own.
type dropin struct {
	path, toml string
}

// dropins are the drop-ins of cfg, validated, in a fixed order.
func dropins(cfg *mcfgv1.ContainerRuntimeConfiguration) []dropin {
	var out []dropin
	add := func(field, section, line string) {
		out = append(out, dropin{dropinDir + "01-ctrcfg-" + field, fmt.Sprintf("[%s]\n%s\n", section, line)})
	}
	if cfg.PidsLimit != nil {
		add("pidsLimit", "crio.runtime", fmt.Sprintf("pids_limit = %d", *cfg.PidsLimit))
	}
	if cfg.LogLevel != "" {
		add("logLevel", "crio.runtime", "log_level = "+strconv.Quote(cfg.LogLevel))
	}
	if cfg.LogSizeMax != nil {
		add("logSizeMax", "crio.runtime", fmt.Sprintf("log_size_max = %d", cfg.LogSizeMax.Value()))
	}
	if cfg.OverlaySize != nil {
		// The overlay driver's quota, as a storage option of CRI-O's
		// (MCO writes it into /etc/containers/storage.conf).
		add("overlaySize", "crio", fmt.Sprintf("storage_option = [%s]", strconv.Quote("overlay.size="+cfg.OverlaySize.String())))
	}
	if cfg.DefaultRuntime != "" {
		add("defaultRuntime", "crio.runtime", "default_runtime = "+strconv.Quote(cfg.DefaultRuntime))
	}
	return out
}

// generatedName is the MachineConfig a ContainerRuntimeConfig with suffix
// writes for pool.
func generatedName(pool, suffix string) string {
	name := "99-" + pool + "-generated-containerruntime"
	if suffix != "" {
		name += "-" + suffix
	}
	return name
}

// generatedMachineConfig carries the drop-ins for pool.
func generatedMachineConfig(name, pool, version string, ds []dropin) (*mcfgv1.MachineConfig, error) {
	files := make([]map[string]any, 0, len(ds))
	for _, d := range ds {
		files = append(files, map[string]any{
			"path": d.path, "mode": 0o644, "overwrite": true,
			"contents": map[string]any{"source": mcfgv1.DataURL([]byte(d.toml))},
		})
	}
	config, err := json.Marshal(map[string]any{
		"ignition": map[string]any{"version": mcfgv1.IgnitionVersion},
		"storage":  map[string]any{"files": files},
	})
	if err != nil {
		return nil, err
	}
	return &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{mcfgv1.RoleLabel: pool},
			Annotations: map[string]string{mcfgv1.GeneratedByControllerVersionAnnotation: version},
		},
		Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: config}},
	}, nil
}
