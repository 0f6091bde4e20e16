package machineconfig

import (
	"fmt"
	"os"
	"strings"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// osSettings are the fields of a MachineConfig that change the OS itself:
// an image-based OS has its own tool for them (rpm-ostree, bootc), so the
// agent runs the operator's --os-update-command instead of acting alone.
type osSettings struct {
	OSImageURL      string   `json:"osImageURL,omitempty"`
	ExtensionsImage string   `json:"extensionsImage,omitempty"`
	KernelType      string   `json:"kernelType,omitempty"`
	Extensions      []string `json:"extensions,omitempty"`
}

func osSettingsOf(spec mcv1.MachineConfigSpec) osSettings {
	kt := spec.KernelType
	if kt == "default" {
		kt = ""
	}
	return osSettings{OSImageURL: spec.OSImageURL, ExtensionsImage: spec.BaseOSExtensionsContainerImage,
		KernelType: kt, Extensions: spec.Extensions}
}

// changed names the fields of s that differ from was.
func (s osSettings) changed(was osSettings) []string {
	var out []string
	if s.OSImageURL != was.OSImageURL {
		out = append(out, "osImageURL")
	}
	if s.ExtensionsImage != was.ExtensionsImage {
		out = append(out, "baseOSExtensionsContainerImage")
	}
	if s.KernelType != was.KernelType {
		out = append(out, "kernelType")
	}
	if strings.Join(s.Extensions, " ") != strings.Join(was.Extensions, " ") {
		out = append(out, "extensions")
	}
	return out
}

// env is what the OS update command is told.
func (s osSettings) env(root string) []string {
	kt := s.KernelType
	if kt == "" {
		kt = "default"
	}
	return []string{
		"MACHINA_OS_IMAGE_URL=" + s.OSImageURL,
		"MACHINA_BASE_OS_EXTENSIONS_IMAGE=" + s.ExtensionsImage,
		"MACHINA_KERNEL_TYPE=" + kt,
		"MACHINA_EXTENSIONS=" + strings.Join(s.Extensions, " "),
		"MACHINA_ROOT=" + root,
	}
}

// checkFIPS refuses a configuration whose fips differs from the node's:
// FIPS mode is chosen at installation (MCO refuses a change too).
// fipsFile is the kernel's /proc/sys/crypto/fips_enabled.
func checkFIPS(want bool, fipsFile string) error {
	data, err := os.ReadFile(fipsFile)
	have := err == nil && strings.TrimSpace(string(data)) == "1"
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("fips: cannot read %s: %w", fipsFile, err)
	}
	if want != have {
		return fmt.Errorf("fips: the configuration sets %t but the node runs with FIPS mode %s, which is chosen at installation and cannot change in place",
			want, map[bool]string{true: "on", false: "off"}[have])
	}
	return nil
}
