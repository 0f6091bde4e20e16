package machine

import (
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// machineMessage is the Driver API's view of a Machine (§4.9).
func machineMessage(m *v1alpha1.Machine) *driverv1alpha1.Machine {
	msg := &driverv1alpha1.Machine{
		Name:        m.Name,
		Namespace:   m.Namespace,
		Uid:         string(m.UID),
		ProviderId:  m.Spec.ProviderID,
		Labels:      maps.Clone(m.Labels),
		Annotations: maps.Clone(m.Annotations),
	}
	nt := m.Spec.NodeTemplateSpec
	if len(nt.Labels) > 0 || len(nt.Annotations) > 0 || len(nt.Spec.Taints) > 0 {
		tmpl := &driverv1alpha1.NodeTemplate{
			Labels:      maps.Clone(nt.Labels),
			Annotations: maps.Clone(nt.Annotations),
		}
		for _, t := range nt.Spec.Taints {
			tmpl.Taints = append(tmpl.Taints, &driverv1alpha1.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
		}
		msg.NodeTemplate = tmpl
	}
	return msg
}

// nodeAddresses converts the driver's addresses, ignoring types the core
// does not know (§4.9).
func nodeAddresses(in []*driverv1alpha1.NodeAddress) []corev1.NodeAddress {
	var out []corev1.NodeAddress
	for _, a := range in {
		switch t := corev1.NodeAddressType(a.GetType()); t {
		case corev1.NodeHostName, corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			out = append(out, corev1.NodeAddress{Type: t, Address: a.GetAddress()})
		}
	}
	return out
}
