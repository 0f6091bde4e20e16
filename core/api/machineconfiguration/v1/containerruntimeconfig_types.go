package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ContainerRuntimeConfig changes CRI-O's configuration on the pools it
// selects: the ContainerRuntimeConfig controller writes a CRI-O drop-in
// (/etc/crio/crio.conf.d/01-ctrcfg-*) as the MachineConfig
// 99-<pool>-generated-containerruntime.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ctrcfg
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ContainerRuntimeConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ContainerRuntimeConfigSpec   `json:"spec"`
	Status ContainerRuntimeConfigStatus `json:"status,omitempty"`
}

// ContainerRuntimeConfigSpec is the runtime configuration to apply and
// where.
type ContainerRuntimeConfigSpec struct {
	// MachineConfigPoolSelector selects the pools by their labels. An empty
	// or missing selector selects no pool.
	// +optional
	MachineConfigPoolSelector *metav1.LabelSelector `json:"machineConfigPoolSelector,omitempty"`

	// ContainerRuntimeConfig is what to change.
	ContainerRuntimeConfig *ContainerRuntimeConfiguration `json:"containerRuntimeConfig"`
}

// ContainerRuntimeConfiguration is MCO's subset of CRI-O's settings.
type ContainerRuntimeConfiguration struct {
	// PidsLimit is the most processes a container may run (CRI-O's
	// pids_limit): -1 or 0 mean no limit (0 is the runtime's default), else
	// at least 20.
	// +optional
	PidsLimit *int64 `json:"pidsLimit,omitempty"`

	// LogLevel is CRI-O's log level: fatal, panic, error, warn, info,
	// debug or trace.
	// +optional
	LogLevel string `json:"logLevel,omitempty"`

	// LogSizeMax is the largest a container's log may grow (CRI-O's
	// log_size_max): a negative value means no limit, else at least 8k.
	// +optional
	LogSizeMax *resource.Quantity `json:"logSizeMax,omitempty"`

	// OverlaySize is the most a container's writable layer may hold
	// (the overlay storage driver's size): positive, 0 or unset for none.
	// +optional
	OverlaySize *resource.Quantity `json:"overlaySize,omitempty"`

	// DefaultRuntime is the OCI runtime of containers: crun or runc (unset
	// keeps CRI-O's default).
	// +kubebuilder:validation:Enum="";crun;runc
	// +optional
	DefaultRuntime string `json:"defaultRuntime,omitempty"`
}

// ContainerRuntimeConfigStatus is what the ContainerRuntimeConfig
// controller observed.
type ContainerRuntimeConfigStatus struct {
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

// ContainerRuntimeConfigList is a list of ContainerRuntimeConfigs.
//
// +kubebuilder:object:root=true
type ContainerRuntimeConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ContainerRuntimeConfig `json:"items"`
}
