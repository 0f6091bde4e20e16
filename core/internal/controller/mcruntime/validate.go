package mcruntime

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// Bounds of MCO's validateUserContainerRuntimeConfig
// (pkg/controller/container-runtime-config in
// openshift/machine-config-operator).
const minPidsLimit = 20

var (
	minLogSize = resource.MustParse("8k")
	logLevels  = []string{"fatal", "panic", "error", "warn", "info", "debug", "trace"}
)

// validate checks the ContainerRuntimeConfig's settings, naming the field
// that is wrong.
func validate(cfg *mcfgv1.ContainerRuntimeConfiguration) error {
	if cfg == nil {
		return errors.New("spec.containerRuntimeConfig is empty: nothing to apply")
	}
	if cfg.PidsLimit == nil && cfg.LogLevel == "" && cfg.LogSizeMax == nil && cfg.OverlaySize == nil && cfg.DefaultRuntime == "" {
		return errors.New("spec.containerRuntimeConfig sets none of pidsLimit, logLevel, logSizeMax, overlaySize, defaultRuntime: nothing to apply")
	}
	if p := cfg.PidsLimit; p != nil && *p != -1 && *p != 0 && *p < minPidsLimit {
		return fmt.Errorf("spec.containerRuntimeConfig.pidsLimit %d: must be -1 or 0 (no limit) or at least %d", *p, minPidsLimit)
	}
	if cfg.LogLevel != "" && !slices.Contains(logLevels, cfg.LogLevel) {
		return fmt.Errorf("spec.containerRuntimeConfig.logLevel %q: must be one of %s", cfg.LogLevel, strings.Join(logLevels, ", "))
	}
	if q := cfg.LogSizeMax; q != nil && q.Sign() > 0 && q.Cmp(minLogSize) < 0 {
		return fmt.Errorf("spec.containerRuntimeConfig.logSizeMax %s: must be negative (no limit) or at least 8k", q)
	}
	if q := cfg.OverlaySize; q != nil && q.Sign() < 0 {
		return fmt.Errorf("spec.containerRuntimeConfig.overlaySize %s: may not be negative", q)
	}
	switch cfg.DefaultRuntime {
	case "", "crun", "runc":
	default:
		return fmt.Errorf("spec.containerRuntimeConfig.defaultRuntime %q: must be crun or runc", cfg.DefaultRuntime)
	}
	return nil
}
