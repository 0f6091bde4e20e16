package driverclass

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Message is the Driver API's view of a MachineClass (§4.9). The provider
// spec travels exactly as stored.
func Message(c *v1alpha1.MachineClass) *driverv1alpha1.MachineClass {
	msg := &driverv1alpha1.MachineClass{
		Name:         c.Name,
		Namespace:    c.Namespace,
		ProviderSpec: c.ProviderSpec.Raw,
		Provider:     c.Provider,
	}
	if nt := c.NodeTemplate; nt != nil {
		tmpl := &driverv1alpha1.ClassNodeTemplate{
			Capacity:        quantities(nt.Capacity),
			VirtualCapacity: quantities(nt.VirtualCapacity),
			InstanceType:    nt.InstanceType,
			Region:          nt.Region,
			Zone:            nt.Zone,
		}
		if nt.Architecture != nil {
			tmpl.Architecture = *nt.Architecture
		}
		msg.NodeTemplate = tmpl
	}
	return msg
}

func quantities(rl corev1.ResourceList) map[string]string {
	if len(rl) == 0 {
		return nil
	}
	out := make(map[string]string, len(rl))
	for name, q := range rl {
		out[string(name)] = q.String()
	}
	return out
}
