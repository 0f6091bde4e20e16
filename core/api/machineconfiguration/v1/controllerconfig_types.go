package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ControllerConfigName is the one ControllerConfig the template controller
// reads, as in MCO.
const ControllerConfigName = "machine-config-controller"

// ControllerConfig holds the cluster's values the template controller
// fills its built-in templates with: for every role (master, worker, and
// each other pool's name) it writes the base MachineConfigs
// 01-<role>-kubelet (the kubelet's configuration, its unit and the
// node-sizing service), owned by the ControllerConfig. Only the one named
// machine-config-controller is read.
//
// MCO's ControllerConfig carries much more (certificates, platform,
// images, proxy); machina's holds what its templates use.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ControllerConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ControllerConfigSpec   `json:"spec"`
	Status ControllerConfigStatus `json:"status,omitempty"`
}

// ControllerConfigSpec is what the templates need.
type ControllerConfigSpec struct {
	// ClusterDNSIP is the cluster DNS service's address: the kubelet's
	// clusterDNS.
	// +kubebuilder:validation:MinLength=1
	ClusterDNSIP string `json:"clusterDNSIP"`

	// ClusterDomain is the cluster's DNS domain: the kubelet's
	// clusterDomain. Unset means cluster.local. This field is machina's;
	// MCO's templates always write cluster.local.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ClusterDomain string `json:"clusterDomain,omitempty"`
}

// ControllerConfigStatus is what the template controller observed.
type ControllerConfigStatus struct {
	// ObservedGeneration is the generation of the spec last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: TemplateControllerCompleted (the base MachineConfigs of
	// every role are written) and TemplateControllerFailing (they are not;
	// the message says why).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ControllerConfigList is a list of ControllerConfigs.
//
// +kubebuilder:object:root=true
type ControllerConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ControllerConfig `json:"items"`
}
