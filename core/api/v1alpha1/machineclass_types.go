package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mcc
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.provider`,description="Provider (driver) of the class."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time since the class was created."

// MachineClass is a reusable provider configuration that Machines,
// MachineSets and MachineDeployments refer to. Its status is machina's
// addition (MCM's classes have none): conditions the manager reports.
type MachineClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// NodeTemplate describes the nodes of this class, for the cluster-autoscaler
	// to scale a node group up from zero. The schema keeps unknown fields, as
	// MCM's does.
	// +kubebuilder:validation:XPreserveUnknownFields
	// +optional
	NodeTemplate *NodeTemplate `json:"nodeTemplate,omitempty"`

	// CredentialsSecretRef refers to a secret that holds the provider
	// credentials, so that classes with different user data can share them.
	// +optional
	CredentialsSecretRef *corev1.SecretReference `json:"credentialsSecretRef,omitempty"`

	// ProviderSpec is the provider-specific machine configuration, a JSON object
	// the core hands to the driver unread.
	// +kubebuilder:validation:XPreserveUnknownFields
	// +kubebuilder:validation:Type=object
	ProviderSpec runtime.RawExtension `json:"providerSpec"`

	// Provider names the driver that serves this class.
	// +optional
	Provider string `json:"provider,omitempty"`

	// SecretRef refers to a secret with the class's secrets, such as user data
	// and (when credentialsSecretRef is unset) credentials.
	// +optional
	SecretRef *corev1.SecretReference `json:"secretRef,omitempty"`

	// Status is what the manager observed about the class.
	// +optional
	Status *MachineClassStatus `json:"status,omitempty"`
}

// MachineClassStatus is what the manager observed about a MachineClass.
type MachineClassStatus struct {
	// Conditions of the class; see MachineClassDriverFound and
	// MachineClassScaleFromZero.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// MachineClassDriverFound is the MachineClass condition that says whether
// a driver of the manager serves the class's provider. False (reason
// MachineClassNoDriver) leaves the class's machines alone: no call is made
// for them, and none is deleted or failed for it.
const MachineClassDriverFound = "DriverFound"

// Reasons of MachineClassDriverFound.
const (
	// MachineClassDriverServes: one driver serves the provider.
	MachineClassDriverServes = "DriverServesProvider"
	// MachineClassNoDriver: no driver, or more than one, serves it.
	MachineClassNoDriver = "NoDriverForProvider"
)

// MachineClassScaleFromZero is the MachineClass condition that says
// whether the cluster-autoscaler can scale a deployment of this class up
// from zero nodes: its mcm provider builds the first node from
// nodeTemplate, and refuses one without capacity cpu, memory and gpu, or
// without instanceType, region and zone (MCM validates the same). False
// names what is missing; machines of the class are created either way.
const MachineClassScaleFromZero = "ScaleFromZero"

// Reasons of MachineClassScaleFromZero.
const (
	// MachineClassNodeTemplateComplete: nodeTemplate has every field.
	MachineClassNodeTemplateComplete = "NodeTemplateComplete"
	// MachineClassNodeTemplateIncomplete: nodeTemplate lacks a field, or
	// has a negative capacity; the message names them.
	MachineClassNodeTemplateIncomplete = "NodeTemplateIncomplete"
	// MachineClassNoNodeTemplate: the class has no nodeTemplate.
	MachineClassNoNodeTemplate = "NoNodeTemplate"
)

// NodeTemplate describes the nodes a MachineClass creates.
type NodeTemplate struct {
	// Capacity of the node: cpu, memory, gpu, and so on.
	Capacity corev1.ResourceList `json:"capacity"`

	// VirtualCapacity holds extended resources that the controller patches
	// into the node's status capacity.
	// +optional
	VirtualCapacity corev1.ResourceList `json:"virtualCapacity,omitempty"`

	// InstanceType of the node.
	InstanceType string `json:"instanceType"`

	// Region of the node.
	Region string `json:"region"`

	// Zone of the node.
	Zone string `json:"zone"`

	// Architecture of the node, for example amd64 or arm64.
	// +optional
	Architecture *string `json:"architecture,omitempty"`
}

// +kubebuilder:object:root=true

// MachineClassList is a list of MachineClasses.
type MachineClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the machine classes.
	Items []MachineClass `json:"items"`
}
