package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mcs
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Number of desired machines."
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.replicas`,description="Number of machines."
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Number of ready machines."
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,description="Number of machines ready for at least minReadySeconds."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time since the machine set was created."

// MachineSet keeps a number of identical machines, like a ReplicaSet keeps pods.
type MachineSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired machine set.
	// +optional
	Spec MachineSetSpec `json:"spec,omitempty"`

	// Status is the machine set as last observed by the controller.
	// +optional
	Status MachineSetStatus `json:"status,omitempty"`
}

// MachineSetSpec is the desired state of a MachineSet.
type MachineSetSpec struct {
	// Replicas is the number of machines wanted. It defaults to 0 in the
	// schema, so that a stored object always has it (the JSON tag omits a
	// zero): the /scale subresource updates only a field that exists, and
	// `kubectl scale` of a deployment at zero would fail without it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Selector selects the machines that belong to the set; it must match the
	// template's labels.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// MachineClass is kept for MCM compatibility; machines take their class
	// from template.spec.class.
	// +optional
	MachineClass ClassSpec `json:"machineClass,omitempty"`

	// Template is what new machines are created from.
	// +optional
	Template MachineTemplateSpec `json:"template,omitempty"`

	// MinReadySeconds is how long a machine must be ready to count as available.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// AutoPreserveFailedMachineMax is how many Failed machines of the set the
	// controller may preserve automatically.
	// +kubebuilder:validation:Minimum=0
	// +optional
	AutoPreserveFailedMachineMax *int32 `json:"autoPreserveFailedMachineMax,omitempty"`
}

// MachineSetStatus is the observed state of a MachineSet.
type MachineSetStatus struct {
	// Replicas is the number of machines of the set.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// FullyLabeledReplicas is the number of machines whose labels match the template's.
	// +optional
	FullyLabeledReplicas int32 `json:"fullyLabeledReplicas,omitempty"`

	// ReadyReplicas is the number of Running machines.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas is the number of machines ready for at least minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// PreservedFailedReplicas is the number of Failed machines kept by preservation.
	// +optional
	PreservedFailedReplicas int32 `json:"preservedFailedReplicas,omitempty"`

	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions of the machine set. The JSON name is MCM's, singular.
	// +optional
	Conditions []MachineSetCondition `json:"machineSetCondition,omitempty"`

	// LastOperation is the last operation performed on the machine set.
	// +optional
	LastOperation LastOperation `json:"lastOperation,omitempty"`

	// FailedMachines summarises the machines whose last operation failed.
	// +optional
	FailedMachines *[]MachineSummary `json:"failedMachines,omitempty"`

	// AutoPreserveFailedMachineCount is the number of Failed machines the
	// controller preserved automatically.
	// +optional
	AutoPreserveFailedMachineCount *int32 `json:"autoPreserveFailedMachineCount,omitempty"`

	// LabelSelector is spec.selector in its string form, published so that the
	// /scale subresource reports a selector (the HorizontalPodAutoscaler needs
	// one). Machina addition.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// MachineSetConditionType is the type of a MachineSet condition.
type MachineSetConditionType string

// The MachineSet condition types.
const (
	// MachineSetReplicaFailure means a machine of the set could not be created
	// or deleted.
	MachineSetReplicaFailure MachineSetConditionType = "ReplicaFailure"
	// MachineSetFrozen means the safety controller froze the set because it has
	// far more machines than wanted.
	MachineSetFrozen MachineSetConditionType = "Frozen"
)

// MachineSetCondition is one condition of a MachineSet.
type MachineSetCondition struct {
	// Type of the condition.
	Type MachineSetConditionType `json:"type"`

	// Status of the condition: True, False or Unknown.
	Status ConditionStatus `json:"status"`

	// LastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`

	// Reason is a CamelCase reason for the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message is a human-readable explanation.
	// +optional
	Message string `json:"message,omitempty"`
}

// +kubebuilder:object:root=true

// MachineSetList is a list of MachineSets.
type MachineSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the machine sets.
	Items []MachineSet `json:"items"`
}
