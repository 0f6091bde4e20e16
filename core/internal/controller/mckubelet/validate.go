package mckubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// kubeletAPIVersion and kubeletKind are what the kubelet configuration
// file declares.
const (
	kubeletAPIVersion = "kubelet.config.k8s.io/v1beta1"
	kubeletKind       = "KubeletConfiguration"
)

// userSpec is a validated KubeletConfig: what it changes in the pools'
// kubelet configuration (overrides, merged over the base), and the
// node-sizing file it writes (nil: the template's stays).
type userSpec struct {
	overrides  map[string]any
	nodeSizing []byte
}

// userConfig reads and checks a KubeletConfig as MCO does
// (pkg/controller/kubelet-config validateUserKubeletConfig in
// openshift/machine-config-operator), but strictly: spec.kubeletConfig
// decodes into the kubelet's own KubeletConfiguration type with no unknown
// or duplicate field and every value of its field's type; it may not set
// what the cluster depends on (MCO's list); autoSizingReserved and
// systemReserved exclude each other; tlsSecurityProfile is one of
// OpenShift's profiles. Each error names the field.
func userConfig(kc *mcfgv1.KubeletConfig) (*userSpec, error) {
	spec := kc.Spec
	hasConfig := spec.KubeletConfig != nil && len(spec.KubeletConfig.Raw) > 0
	hasTLS := spec.TLSSecurityProfile != nil && len(spec.TLSSecurityProfile.Raw) > 0
	if !hasConfig && !hasTLS && spec.LogLevel == nil && spec.AutoSizingReserved == nil {
		return nil, errors.New("spec.kubeletConfig, spec.logLevel, spec.autoSizingReserved and spec.tlsSecurityProfile are all empty: nothing to apply")
	}
	out := &userSpec{overrides: map[string]any{}}
	var typed kubeletv1beta1.KubeletConfiguration
	if hasConfig {
		raw := spec.KubeletConfig.Raw
		strict, err := sigsjson.UnmarshalStrict(raw, &typed)
		if err != nil {
			return nil, fmt.Errorf("spec.kubeletConfig is not a KubeletConfiguration: %v", err)
		}
		if len(strict) > 0 {
			msgs := make([]string, len(strict))
			for i, e := range strict {
				msgs[i] = e.Error()
			}
			return nil, fmt.Errorf("spec.kubeletConfig is not a KubeletConfiguration: %s", strings.Join(msgs, "; "))
		}
		if err := json.Unmarshal(raw, &out.overrides); err != nil || out.overrides == nil {
			return nil, errors.New("spec.kubeletConfig is not a JSON object")
		}
		if typed.APIVersion != "" && typed.APIVersion != kubeletAPIVersion {
			return nil, fmt.Errorf("spec.kubeletConfig.apiVersion is %s, want %s", typed.APIVersion, kubeletAPIVersion)
		}
		if typed.Kind != "" && typed.Kind != kubeletKind {
			return nil, fmt.Errorf("spec.kubeletConfig.kind is %s, want %s", typed.Kind, kubeletKind)
		}
		if refused := refusedFields(&typed); len(refused) > 0 {
			return nil, fmt.Errorf("spec.kubeletConfig may not set %s: the controller manages them", strings.Join(refused, ", "))
		}
		if typed.SystemReservedCgroup != "" && typed.SystemCgroups != "" && typed.SystemReservedCgroup != typed.SystemCgroups {
			return nil, fmt.Errorf("spec.kubeletConfig.systemReservedCgroup (%s) must match systemCgroups (%s)", typed.SystemReservedCgroup, typed.SystemCgroups)
		}
	}
	if spec.AutoSizingReserved != nil && *spec.AutoSizingReserved && len(typed.SystemReserved) > 0 {
		return nil, errors.New("spec.autoSizingReserved and spec.kubeletConfig.systemReserved cannot be set together: the reservation is either computed from the node's capacity or given")
	}
	if hasTLS {
		tls, err := parseTLSProfile(spec.TLSSecurityProfile.Raw)
		if err != nil {
			return nil, err
		}
		for k, v := range tls {
			out.overrides[k] = v
		}
	}
	out.nodeSizing = nodeSizingEnv(spec.AutoSizingReserved, out.overrides)
	return out, nil
}

// refusedFields are the fields of cfg a user may not set, as MCO decides:
// the node may not come back after a reboot with other values. They are
// set from the ControllerConfig and the templates.
func refusedFields(cfg *kubeletv1beta1.KubeletConfiguration) []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(cfg.CgroupDriver != "", "cgroupDriver")
	add(len(cfg.ClusterDNS) > 0, "clusterDNS")
	add(cfg.ClusterDomain != "", "clusterDomain")
	add(cfg.FailSwapOn != nil, "failSwapOn")
	add(len(cfg.FeatureGates) > 0, "featureGates")
	add(cfg.MemorySwap.SwapBehavior != "", "memorySwap.swapBehavior")
	add(cfg.StaticPodPath != "", "staticPodPath")
	return out
}

// validate is the phase that decodes and checks spec.kubeletConfig and
// the fields MCO refuses (userConfig).
func (r *Reconciler) validate(_ context.Context, s *scope) (phase.Result, error) {
	user, err := userConfig(s.kc)
	if err != nil {
		return s.fail(err.Error())
	}
	s.user = user
	return phase.Result{}, nil
}
