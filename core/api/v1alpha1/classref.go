package v1alpha1

// RefersToMachineClass reports whether the reference names a MachineClass.
// MCM manifests set kind "MachineClass" (older ones may name
// provider-specific kinds, which are other resources) and apiGroup
// "machine.sapcloud.io" or nothing.
func (r ClassSpec) RefersToMachineClass() bool {
	if r.Name == "" {
		return false
	}
	if r.Kind != "" && r.Kind != "MachineClass" {
		return false
	}
	return r.APIGroup == "" || r.APIGroup == GroupVersion.Group
}
