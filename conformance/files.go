package conformance

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/yaml"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// The loaders below read the YAML or JSON files of the machina-conformance
// binary, so that a Go test can use the same files as the command line.

// classFile is the file form of a MachineClass: either the fields at the top
// level or a machine.sapcloud.io/v1alpha1 MachineClass manifest, whose
// provider fields are at the top level too.
type classFile struct {
	Name     string `json:"name"`
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Provider     string          `json:"provider"`
	ProviderSpec json.RawMessage `json:"providerSpec"`
	NodeTemplate *struct {
		Capacity        map[string]string `json:"capacity"`
		VirtualCapacity map[string]string `json:"virtualCapacity"`
		InstanceType    string            `json:"instanceType"`
		Region          string            `json:"region"`
		Zone            string            `json:"zone"`
		Architecture    *string           `json:"architecture"`
	} `json:"nodeTemplate"`
}

// LoadMachineClass reads a MachineClass from a YAML or JSON file: the keys
// name, provider, providerSpec and nodeTemplate, or a whole
// machine.sapcloud.io/v1alpha1 MachineClass manifest (name from
// metadata.name).
func LoadMachineClass(path string) (MachineClass, error) {
	var f classFile
	if err := readYAML(path, &f); err != nil {
		return MachineClass{}, err
	}
	c := MachineClass{Name: f.Name, Provider: f.Provider, ProviderSpec: f.ProviderSpec}
	if c.Name == "" {
		c.Name = f.Metadata.Name
	}
	if err := checkJSONObject(c.ProviderSpec); err != nil {
		return MachineClass{}, fmt.Errorf("%s: providerSpec %w", path, err)
	}
	if nt := f.NodeTemplate; nt != nil {
		c.NodeTemplate = &driverv1alpha1.ClassNodeTemplate{
			Capacity:        nt.Capacity,
			VirtualCapacity: nt.VirtualCapacity,
			InstanceType:    nt.InstanceType,
			Region:          nt.Region,
			Zone:            nt.Zone,
		}
		if nt.Architecture != nil {
			c.NodeTemplate.Architecture = *nt.Architecture
		}
	}
	return c, nil
}

// LoadProviderSpec reads a provider spec (a JSON object) from a YAML or JSON
// file, e.g. for Config.IncompatibleProviderSpec.
func LoadProviderSpec(path string) (json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	spec, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkJSONObject(spec); err != nil {
		return nil, fmt.Errorf("%s: provider spec %w", path, err)
	}
	return spec, nil
}

// secretFile is a Kubernetes Secret manifest.
type secretFile struct {
	Kind       string            `json:"kind"`
	Data       map[string]string `json:"data"`
	StringData map[string]string `json:"stringData"`
}

// LoadSecrets reads secret data from a YAML or JSON file: either a plain map
// of keys to string values, or a Kubernetes Secret manifest (kind: Secret)
// whose data is base64 and whose stringData is plain text.
func LoadSecrets(path string) (map[string][]byte, error) {
	var probe secretFile
	if err := readYAML(path, &probe); err != nil {
		// A plain map with a non-string value (e.g. a nested object) lands
		// here too; say what the file must hold.
		return nil, fmt.Errorf("%s: want a map of strings or a Secret manifest: %w", path, err)
	}
	out := map[string][]byte{}
	if probe.Kind == "Secret" {
		for k, v := range probe.Data {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				// The value is secret: name the key only.
				return nil, fmt.Errorf("%s: data.%s is not base64", path, k)
			}
			out[k] = b
		}
		for k, v := range probe.StringData {
			out[k] = []byte(v)
		}
		return out, nil
	}
	var plain map[string]string
	if err := readYAML(path, &plain); err != nil {
		return nil, fmt.Errorf("%s: want a map of strings or a Secret manifest: %w", path, err)
	}
	for k, v := range plain {
		out[k] = []byte(v)
	}
	return out, nil
}

// nodeTemplateFile is the file form of Machine.spec.nodeTemplate.
type nodeTemplateFile struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	Taints      []struct {
		Key    string `json:"key"`
		Value  string `json:"value"`
		Effect string `json:"effect"`
	} `json:"taints"`
}

// LoadNodeTemplate reads a Machine node template (labels, annotations,
// taints) from a YAML or JSON file.
func LoadNodeTemplate(path string) (*driverv1alpha1.NodeTemplate, error) {
	var f nodeTemplateFile
	if err := readYAML(path, &f); err != nil {
		return nil, err
	}
	nt := &driverv1alpha1.NodeTemplate{Labels: f.Labels, Annotations: f.Annotations}
	for _, t := range f.Taints {
		nt.Taints = append(nt.Taints, &driverv1alpha1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
	}
	return nt, nil
}

// volumeFile is one entry of a volume fixtures file.
type volumeFile struct {
	Name             string          `json:"name"`
	Spec             json.RawMessage `json:"spec"`
	PersistentVolume *struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Spec json.RawMessage `json:"spec"`
	} `json:"persistentVolume"`
	VolumeID string `json:"volumeID"`
	NotMine  bool   `json:"notMine"`
}

// LoadVolumeFixtures reads GetVolumeIDs fixtures from a YAML or JSON file: a
// list whose entries hold either name and spec, or a whole PersistentVolume
// manifest under persistentVolume, plus volumeID (the expected answer) or
// notMine: true.
func LoadVolumeFixtures(path string) ([]VolumeFixture, error) {
	var entries []volumeFile
	if err := readYAML(path, &entries); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: no volumes", path)
	}
	out := make([]VolumeFixture, 0, len(entries))
	for i, e := range entries {
		v := VolumeFixture{Name: e.Name, Spec: e.Spec, VolumeID: e.VolumeID, NotMine: e.NotMine}
		if pv := e.PersistentVolume; pv != nil {
			if v.Name != "" || len(v.Spec) != 0 {
				return nil, fmt.Errorf("%s: entry %d: use either persistentVolume or name and spec", path, i)
			}
			v.Name, v.Spec = pv.Metadata.Name, pv.Spec
		}
		out = append(out, v)
	}
	return out, nil
}

// LoadUserData reads user data verbatim.
func LoadUserData(path string) ([]byte, error) {
	return os.ReadFile(path)
}

// readYAML decodes a YAML or JSON file into v. Unknown keys are ignored so
// that whole Kubernetes manifests (apiVersion, kind, secretRef...) load.
func readYAML(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return fmt.Errorf("%s: empty file", path)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
