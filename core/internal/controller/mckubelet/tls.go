package mckubelet

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// tlsSecurityProfile is OpenShift's TLS profile (config.openshift.io/v1
// TLSSecurityProfile), the subset a KubeletConfig carries: a type and, for
// Custom, the ciphers and the minimum version.
type tlsSecurityProfile struct {
	Type         string            `json:"type"`
	Old          *struct{}         `json:"old,omitempty"`
	Intermediate *struct{}         `json:"intermediate,omitempty"`
	Modern       *struct{}         `json:"modern,omitempty"`
	Custom       *customTLSProfile `json:"custom,omitempty"`
}

type customTLSProfile struct {
	Ciphers       []string `json:"ciphers"`
	MinTLSVersion string   `json:"minTLSVersion"`
}

// tlsProfile is what a profile sets in the kubelet configuration.
type tlsProfile struct {
	minVersion string
	ciphers    []string // OpenSSL names, as OpenShift's API writes them
}

// tlsProfiles are OpenShift's predefined profiles (openshift/api
// config/v1 TLSProfiles, Mozilla's server side TLS guidelines 5.7).
var tlsProfiles = map[string]tlsProfile{
	"Old": {minVersion: "VersionTLS10", ciphers: []string{
		"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
		"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
		"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
		"ECDHE-ECDSA-AES128-SHA256", "ECDHE-RSA-AES128-SHA256", "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA",
		"ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA", "AES128-GCM-SHA256", "AES256-GCM-SHA384",
		"AES128-SHA256", "AES128-SHA", "AES256-SHA", "DES-CBC3-SHA",
	}},
	"Intermediate": {minVersion: "VersionTLS12", ciphers: []string{
		"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
		"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384",
		"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305", "ECDHE-RSA-CHACHA20-POLY1305",
	}},
	"Modern": {minVersion: "VersionTLS13", ciphers: []string{
		"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
	}},
}

// ianaCiphers maps OpenSSL cipher names to the IANA names the kubelet's
// tlsCipherSuites takes (library-go's OpenSSLToIANACipherSuites); the TLS
// 1.3 suites have one name.
var ianaCiphers = map[string]string{
	"TLS_AES_128_GCM_SHA256":        "TLS_AES_128_GCM_SHA256",
	"TLS_AES_256_GCM_SHA384":        "TLS_AES_256_GCM_SHA384",
	"TLS_CHACHA20_POLY1305_SHA256":  "TLS_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
	"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
	"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
	"ECDHE-ECDSA-AES128-SHA256":     "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-RSA-AES128-SHA256":       "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
	"ECDHE-ECDSA-AES128-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
	"ECDHE-RSA-AES128-SHA":          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
	"ECDHE-ECDSA-AES256-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
	"ECDHE-RSA-AES256-SHA":          "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
	"AES128-GCM-SHA256":             "TLS_RSA_WITH_AES_128_GCM_SHA256",
	"AES256-GCM-SHA384":             "TLS_RSA_WITH_AES_256_GCM_SHA384",
	"AES128-SHA256":                 "TLS_RSA_WITH_AES_128_CBC_SHA256",
	"AES128-SHA":                    "TLS_RSA_WITH_AES_128_CBC_SHA",
	"AES256-SHA":                    "TLS_RSA_WITH_AES_256_CBC_SHA",
	"DES-CBC3-SHA":                  "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
}

// tlsVersions are the minimum versions a Custom profile may name.
var tlsVersions = []string{"VersionTLS10", "VersionTLS11", "VersionTLS12", "VersionTLS13"}

// parseTLSProfile reads spec.tlsSecurityProfile into the kubelet's
// tlsMinVersion and tlsCipherSuites (IANA names). An unknown type, field or
// cipher is an error naming it: the kubelet does not start on a cipher it
// does not know, so none is dropped silently.
func parseTLSProfile(raw []byte) (map[string]any, error) {
	var p tlsSecurityProfile
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("spec.tlsSecurityProfile: %v", err)
	}
	var prof tlsProfile
	switch p.Type {
	case "Old", "Intermediate", "Modern":
		prof = tlsProfiles[p.Type]
	case "Custom":
		if p.Custom == nil || len(p.Custom.Ciphers) == 0 || p.Custom.MinTLSVersion == "" {
			return nil, fmt.Errorf("spec.tlsSecurityProfile: type Custom needs custom.ciphers and custom.minTLSVersion")
		}
		if !slices.Contains(tlsVersions, p.Custom.MinTLSVersion) {
			return nil, fmt.Errorf("spec.tlsSecurityProfile.custom.minTLSVersion %q is not one of %s", p.Custom.MinTLSVersion, strings.Join(tlsVersions, ", "))
		}
		prof = tlsProfile{minVersion: p.Custom.MinTLSVersion, ciphers: p.Custom.Ciphers}
	default:
		return nil, fmt.Errorf("spec.tlsSecurityProfile.type %q is not one of Old, Intermediate, Modern, Custom", p.Type)
	}
	suites := make([]any, 0, len(prof.ciphers))
	for _, c := range prof.ciphers {
		iana, ok := ianaCiphers[c]
		if !ok && slices.Contains(slices.Collect(maps.Values(ianaCiphers)), c) {
			iana, ok = c, true // an IANA name already
		}
		if !ok {
			return nil, fmt.Errorf("spec.tlsSecurityProfile: cipher %q is not one the kubelet knows", c)
		}
		suites = append(suites, iana)
	}
	return map[string]any{"tlsMinVersion": prof.minVersion, "tlsCipherSuites": suites}, nil
}
