package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// KubeletConfig changes the kubelet configuration of the pools it selects:
// the KubeletConfig controller merges spec.kubeletConfig into the pool's
// kubelet configuration and writes it as the MachineConfig
// 99-<pool>-generated-kubelet.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type KubeletConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   KubeletConfigSpec   `json:"spec,omitempty"`
	Status KubeletConfigStatus `json:"status,omitempty"`
}

// KubeletConfigSpec is the kubelet configuration to apply and where.
type KubeletConfigSpec struct {
	// LogLevel is the kubelet's verbosity (0-10; unset means 2).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +optional
	LogLevel *int32 `json:"logLevel,omitempty"`

	// AutoSizingReserved sizes the system reservation from the node's
	// capacity: the KubeletConfig controller writes MCO's node-sizing file
	// (/etc/node-sizing-enabled.env), which the template's
	// kubelet-auto-node-size unit reads. Exclusive with
	// kubeletConfig.systemReserved.
	// +optional
	AutoSizingReserved *bool `json:"autoSizingReserved,omitempty"`

	// MachineConfigPoolSelector selects the pools by their labels. An empty
	// or missing selector selects no pool.
	// +optional
	MachineConfigPoolSelector *metav1.LabelSelector `json:"machineConfigPoolSelector,omitempty"`

	// KubeletConfig is a fragment of an upstream KubeletConfiguration
	// (kubelet.config.k8s.io/v1beta1), merged over the pool's base
	// kubelet.conf. It is decoded strictly: an unknown field or a value of
	// the wrong type is refused in the status, as are the fields the
	// cluster depends on (cgroupDriver, clusterDNS, clusterDomain,
	// failSwapOn, featureGates, memorySwap.swapBehavior, staticPodPath).
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	KubeletConfig *runtime.RawExtension `json:"kubeletConfig,omitempty"`

	// TLSSecurityProfile is OpenShift's TLS profile of the kubelet (type
	// Old, Intermediate, Modern or Custom), written into kubelet.conf as
	// tlsMinVersion and tlsCipherSuites. Another type is refused in the
	// status.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	TLSSecurityProfile *runtime.RawExtension `json:"tlsSecurityProfile,omitempty"`
}

// KubeletConfigStatus is what the KubeletConfig controller observed.
type KubeletConfigStatus struct {
	// ObservedGeneration is the generation of the spec last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Success (the generated MachineConfigs are written) and
	// Failure (they are not; the message says why).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// KubeletConfigList is a list of KubeletConfigs.
//
// +kubebuilder:object:root=true
type KubeletConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []KubeletConfig `json:"items"`
}
