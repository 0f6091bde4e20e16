package mctemplate

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"text/template"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

// The built-in templates: text/template files filled with a templateData.
// Their layout follows MCO's templates/<role>/01-<role>-kubelet, in
// machina's own words, for one role at a time.
//
//go:embed templates
var templateFS embed.FS

var templates = template.Must(template.New("").Option("missingkey=error").ParseFS(templateFS, "templates/*"))

// templateData is what the templates read.
type templateData struct {
	Role          string
	ClusterDNSIP  string
	ClusterDomain string
}

// defaultClusterDomain is the kubelet's clusterDomain when the
// ControllerConfig names none (MCO's templates always write it).
const defaultClusterDomain = "cluster.local"

// Paths on the node.
const (
	nodeSizingEnvPath = "/etc/node-sizing-enabled.env"
	nodeSizingScript  = "/usr/local/sbin/dynamic-system-reserved-calc.sh"
)

// templateFile is a file a template writes.
type templateFile struct {
	path, template string
	mode           int
}

// templateUnit is a systemd unit a template writes, enabled.
type templateUnit struct {
	name, template string
}

// baseConfig is one base MachineConfig of a role.
type baseConfig struct {
	name  func(role string) string
	files []templateFile
	units []templateUnit
}

// baseConfigs are the base MachineConfigs of every role: 01-<role>-kubelet,
// the kubelet's configuration, unit and node sizing (the KubeletConfig
// controller merges over its kubelet.conf and overrides its node-sizing
// file).
var baseConfigs = []baseConfig{{
	name: func(role string) string { return "01-" + role + "-kubelet" },
	files: []templateFile{
		{mcfgv1.KubeletConfigPath, "kubelet.conf", 0o644},
		{nodeSizingEnvPath, "node-sizing-enabled.env", 0o644},
		{nodeSizingScript, "dynamic-system-reserved-calc.sh", 0o755},
	},
	units: []templateUnit{
		{"kubelet.service", "kubelet.service"},
		{"kubelet-auto-node-size.service", "kubelet-auto-node-size.service"},
	},
}}

// render is the base MachineConfigs of role, filled from cc, labelled with
// the role and annotated with version; the caller sets the owner.
func render(cc *mcfgv1.ControllerConfig, role, version string) ([]*mcfgv1.MachineConfig, error) {
	data := templateData{Role: role, ClusterDNSIP: cc.Spec.ClusterDNSIP, ClusterDomain: cc.Spec.ClusterDomain}
	if data.ClusterDomain == "" {
		data.ClusterDomain = defaultClusterDomain
	}
	out := make([]*mcfgv1.MachineConfig, 0, len(baseConfigs))
	for _, bc := range baseConfigs {
		var files, units []map[string]any
		for _, f := range bc.files {
			text, err := execute(f.template, data)
			if err != nil {
				return nil, err
			}
			files = append(files, map[string]any{
				"path": f.path, "mode": f.mode, "overwrite": true,
				"contents": map[string]any{"source": mcfgv1.DataURL(text)},
			})
		}
		for _, u := range bc.units {
			text, err := execute(u.template, data)
			if err != nil {
				return nil, err
			}
			units = append(units, map[string]any{"name": u.name, "enabled": true, "contents": string(text)})
		}
		config, err := json.Marshal(map[string]any{
			"ignition": map[string]any{"version": mcfgv1.IgnitionVersion},
			"storage":  map[string]any{"files": files},
			"systemd":  map[string]any{"units": units},
		})
		if err != nil {
			return nil, err
		}
		out = append(out, &mcfgv1.MachineConfig{
			ObjectMeta: metav1.ObjectMeta{
				Name:        bc.name(role),
				Labels:      map[string]string{mcfgv1.RoleLabel: role},
				Annotations: map[string]string{mcfgv1.GeneratedByControllerVersionAnnotation: version},
			},
			Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: config}},
		})
	}
	return out, nil
}

func execute(name string, data templateData) ([]byte, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return buf.Bytes(), nil
}
