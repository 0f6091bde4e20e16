package mckubelet

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

func spec(config, tls string, autoSizing *bool) *mcfgv1.KubeletConfig {
	kc := &mcfgv1.KubeletConfig{Spec: mcfgv1.KubeletConfigSpec{AutoSizingReserved: autoSizing}}
	if config != "" {
		kc.Spec.KubeletConfig = &runtime.RawExtension{Raw: []byte(config)}
	}
	if tls != "" {
		kc.Spec.TLSSecurityProfile = &runtime.RawExtension{Raw: []byte(tls)}
	}
	return kc
}

// TestUserConfigRefusals: each invalid KubeletConfig is refused with a
// message naming what is wrong.
func TestUserConfigRefusals(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name string
		kc   *mcfgv1.KubeletConfig
		want string
	}{
		{"nothing", spec("", "", nil), "all empty: nothing to apply"},
		{"wrong type", spec(`{"maxPods":"lots"}`, "", nil), `KubeletConfiguration.maxPods of type int32`},
		{"misspelt field", spec(`{"maxPod":10}`, "", nil), `unknown field "maxPod"`},
		{"wrong case", spec(`{"MaxPods":10}`, "", nil), `unknown field "MaxPods"`},
		{"duplicate field", spec(`{"maxPods":10,"maxPods":20}`, "", nil), `duplicate field "maxPods"`},
		{"not an object", spec(`[1]`, "", nil), "is not a KubeletConfiguration"},
		{"other kind", spec(`{"kind":"Pod"}`, "", nil), "spec.kubeletConfig.kind is Pod"},
		{"refused", spec(`{"clusterDNS":["10.0.0.10"],"cgroupDriver":"cgroupfs","staticPodPath":"/x"}`, "", nil),
			"spec.kubeletConfig may not set cgroupDriver, clusterDNS, staticPodPath: the controller manages them"},
		{"swap", spec(`{"memorySwap":{"swapBehavior":"LimitedSwap"},"failSwapOn":false}`, "", nil),
			"may not set failSwapOn, memorySwap.swapBehavior"},
		{"cgroups", spec(`{"systemReservedCgroup":"/a","systemCgroups":"/b"}`, "", nil), "systemReservedCgroup (/a) must match systemCgroups (/b)"},
		{"auto-sizing and systemReserved", spec(`{"systemReserved":{"memory":"1Gi"}}`, "", &yes),
			"spec.autoSizingReserved and spec.kubeletConfig.systemReserved cannot be set together"},
		{"bogus TLS type", spec("", `{"type":"Bogus"}`, nil), `spec.tlsSecurityProfile.type "Bogus" is not one of Old, Intermediate, Modern, Custom`},
		{"no TLS type", spec("", `{}`, nil), `spec.tlsSecurityProfile.type "" is not one of`},
		{"unknown TLS field", spec("", `{"type":"Old","oldd":{}}`, nil), `unknown field "oldd"`},
		{"custom without ciphers", spec("", `{"type":"Custom","custom":{"minTLSVersion":"VersionTLS12"}}`, nil), "type Custom needs custom.ciphers"},
		{"custom bad version", spec("", `{"type":"Custom","custom":{"ciphers":["AES128-SHA"],"minTLSVersion":"TLS9"}}`, nil), `minTLSVersion "TLS9" is not one of`},
		{"custom bad cipher", spec("", `{"type":"Custom","custom":{"ciphers":["RC4-MD5"],"minTLSVersion":"VersionTLS12"}}`, nil), `cipher "RC4-MD5" is not one the kubelet knows`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := userConfig(tc.kc)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestUserConfigAccepted(t *testing.T) {
	yes := true
	t.Run("autoSizingReserved alone writes the node-sizing file", func(t *testing.T) {
		u, err := userConfig(spec("", "", &yes))
		require.NoError(t, err)
		assert.Empty(t, u.overrides)
		assert.Equal(t, "NODE_SIZING_ENABLED=true\nSYSTEM_RESERVED_MEMORY=1Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n", string(u.nodeSizing))
	})
	t.Run("systemReserved goes to the node-sizing file", func(t *testing.T) {
		u, err := userConfig(spec(`{"systemReserved":{"memory":"3Gi","pid":"1000"},"maxPods":250}`, "", nil))
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"systemReserved": map[string]any{"pid": "1000"}, "maxPods": float64(250)}, u.overrides)
		assert.Equal(t, "NODE_SIZING_ENABLED=false\nSYSTEM_RESERVED_MEMORY=3Gi\nSYSTEM_RESERVED_CPU=500m\nSYSTEM_RESERVED_ES=1Gi\n", string(u.nodeSizing))
	})
	t.Run("tlsSecurityProfile alone sets the kubelet's TLS", func(t *testing.T) {
		u, err := userConfig(spec("", `{"type":"Modern","modern":{}}`, nil))
		require.NoError(t, err)
		assert.Equal(t, map[string]any{"tlsMinVersion": "VersionTLS13",
			"tlsCipherSuites": []any{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}}, u.overrides)
		assert.Nil(t, u.nodeSizing, "the template's node-sizing file stays")
	})
	t.Run("custom TLS with OpenSSL and IANA names", func(t *testing.T) {
		u, err := userConfig(spec("", `{"type":"Custom","custom":{"ciphers":["ECDHE-RSA-AES128-GCM-SHA256","TLS_RSA_WITH_AES_128_CBC_SHA"],"minTLSVersion":"VersionTLS11"}}`, nil))
		require.NoError(t, err)
		assert.Equal(t, []any{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA"}, u.overrides["tlsCipherSuites"])
		assert.Equal(t, "VersionTLS11", u.overrides["tlsMinVersion"])
	})
	t.Run("intermediate", func(t *testing.T) {
		u, err := userConfig(spec(`{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","maxPods":10}`, `{"type":"Intermediate"}`, nil))
		require.NoError(t, err)
		assert.Equal(t, "VersionTLS12", u.overrides["tlsMinVersion"])
		assert.Len(t, u.overrides["tlsCipherSuites"], 9)
		assert.Equal(t, float64(10), u.overrides["maxPods"])
	})
}
