package nodeconfig

import (
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
)

const (
	// machineConfigsPath is followed by a rendered MachineConfig's name.
	machineConfigsPath = "/v1/machineconfigs/"
	// poolsPath is followed by a MachineConfigPool's name.
	poolsPath = "/v1/machineconfigpools/"

	// NodeNameExtra is the user extra that names the Node of the pod a
	// ServiceAccount token is bound to.
	NodeNameExtra = "authentication.kubernetes.io/node-name"

	// Subresource is the virtual subresource of machineconfigs and
	// machineconfigpools whose get the server asks the API server about
	// (a SubjectAccessReview): grant it to the node agents' identity.
	Subresource = "node-config"

	// DefaultCAConfigMap is the ConfigMap (namespace/name) that holds the
	// servers' certificates: in the agents' namespace of deploy/node-agent,
	// which lets the manager write it and the agents read it.
	DefaultCAConfigMap = "machina-node-agent/machina-node-config-ca"
)

// group is the API group of the objects served.
var group = mcv1.GroupVersion.Group
