package mckubelet

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/mcfg"
)

// logLevelDropin is the kubelet unit's drop-in that sets its verbosity.
const logLevelDropin = "/etc/systemd/system/kubelet.service.d/20-logging.conf"

// generatedMachineConfig is the MachineConfig a KubeletConfig writes for a
// pool: the merged kubelet configuration as JSON at
// /etc/kubernetes/kubelet.conf, the log level's drop-in when set, and the
// node-sizing file when the KubeletConfig sets one.
func generatedMachineConfig(name, pool, version string, kubelet map[string]any, logLevel *int32, nodeSizing []byte) (*mcfgv1.MachineConfig, error) {
	data, err := json.MarshalIndent(kubelet, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the kubelet configuration: %w", err)
	}
	files := []map[string]any{file(mcfgv1.KubeletConfigPath, append(data, '\n'))}
	if logLevel != nil {
		files = append(files, file(logLevelDropin,
			[]byte(fmt.Sprintf("[Service]\nEnvironment=\"KUBELET_LOG_LEVEL=%d\"\n", *logLevel))))
	}
	if nodeSizing != nil {
		files = append(files, file(NodeSizingEnvPath, nodeSizing))
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

func file(path string, data []byte) map[string]any {
	return map[string]any{
		"path":      path,
		"mode":      0o644,
		"overwrite": true,
		"contents":  map[string]any{"source": mcfgv1.DataURL(data)},
	}
}

// writeConfigs is the phase that writes, for every selected pool, the
// pool's base kubelet configuration merged with the KubeletConfig's as a
// MachineConfig the KubeletConfig owns, and deletes the ones of pools it no
// longer selects.
func (r *Reconciler) writeConfigs(ctx context.Context, s *scope) (phase.Result, error) {
	var written []string
	for _, pool := range s.pools {
		name := generatedName(pool.Name, s.suffix)
		fragments, err := r.poolFragments(ctx, &pool)
		if err != nil {
			return phase.Result{}, err
		}
		base, berr := poolKubeletConfig(pool.Name, fragments)
		if berr != nil {
			return s.fail(berr.Error())
		}
		mc, err := generatedMachineConfig(name, pool.Name, r.ControllerVersion, mergeConfig(base, s.user.overrides), s.kc.Spec.LogLevel, s.user.nodeSizing)
		if err != nil {
			return phase.Result{}, err
		}
		if failure, err := r.write(ctx, s.kc, mc, s.log); err != nil {
			return phase.Result{}, err
		} else if failure != "" {
			return s.fail(failure)
		}
		written = append(written, name)
	}
	s.written = written
	return phase.Result{}, mcfg.DeleteOwned(ctx, r.Client, s.kc, written, "kubelet", s.log)
}
