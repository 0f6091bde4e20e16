package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mc
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.currentStatus.phase`,description="Phase of the machine."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time since the machine was created."
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.metadata.labels.node`,description="Node backing the machine."
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=`.spec.providerID`,description="Provider ID of the machine's VM.",priority=1

// Machine is one physical or virtual machine and the Kubernetes Node it becomes.
type Machine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired machine.
	// +optional
	Spec MachineSpec `json:"spec,omitempty"`

	// Status is the machine as last observed by the controller.
	// +optional
	Status MachineStatus `json:"status,omitempty"`
}

// MachineSpec is the desired state of a Machine.
type MachineSpec struct {
	// Class is the MachineClass the machine is created from; its name is required.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:XValidation:rule="has(self.name) && self.name != ''",message="class.name is required"
	Class ClassSpec `json:"class,omitempty"`

	// ProviderID is the provider's ID of the machine's VM, set by the controller
	// once the VM exists.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	ProviderID string `json:"providerID,omitempty"`

	// NodeTemplateSpec holds the labels, annotations and taints of the node.
	// +optional
	NodeTemplateSpec NodeTemplateSpec `json:"nodeTemplate,omitempty"`

	// MachineConfiguration overrides the controller's timeouts for this machine.
	// Its fields are inlined into the spec.
	// +optional
	*MachineConfiguration `json:",inline"`
}

// MachineStatus is the observed state of a Machine.
type MachineStatus struct {
	// Addresses of the machine, filled only when the controller runs without a
	// target cluster (then there is no Node to read them from).
	// +optional
	Addresses []corev1.NodeAddress `json:"addresses,omitempty"`

	// Conditions are the conditions of the machine's Node, copied from it.
	// +optional
	Conditions []corev1.NodeCondition `json:"conditions,omitempty"`

	// LastOperation is the last operation performed on the machine.
	// +optional
	LastOperation LastOperation `json:"lastOperation,omitempty"`

	// CurrentStatus is the machine's phase.
	// +optional
	CurrentStatus CurrentStatus `json:"currentStatus,omitempty"`

	// LastKnownState is opaque driver state, handed back to the driver on the
	// next call for this machine.
	// +kubebuilder:validation:MaxLength=65536
	// +optional
	LastKnownState string `json:"lastKnownState,omitempty"`

	// DeletionStep is the step of the deletion flow the machine is in; the flow
	// resumes from it after a controller restart. Empty until deletion starts.
	// Machina addition: MCM keeps this step in lastOperation.description; machina
	// still writes that text for humans but reads the step only from here.
	// +optional
	DeletionStep DeletionStep `json:"deletionStep,omitempty"`

	// DeletionStepStartTime is when the machine entered its current DeletionStep,
	// so a step's own timeout survives restarts.
	// Machina addition.
	// +optional
	DeletionStepStartTime *metav1.Time `json:"deletionStepStartTime,omitempty"`

	// UnhealthySince is when the machine's node was first seen unhealthy (or
	// missing) in the current run of unhealthy observations; cleared when the
	// node is healthy again. The health timeout is measured from it, so it is
	// not reset by phase or status updates. MCM measures from
	// currentStatus.lastUpdateTime instead.
	// Machina addition.
	// +optional
	UnhealthySince *metav1.Time `json:"unhealthySince,omitempty"`

	// CreationObservedTime is when the controller first saw the machine
	// being created (not yet joined), on the controller's own clock. The
	// creation timeout is measured from it, not from
	// metadata.creationTimestamp (the API server's clock), so a skew
	// between the two clocks neither fires nor disables the timeout.
	// Machina addition.
	// +optional
	CreationObservedTime *metav1.Time `json:"creationObservedTime,omitempty"`

	// DeletionObservedTime is when the controller first saw the machine's
	// deletion, on the controller's own clock. The drain timeout is measured
	// from it, not from metadata.deletionTimestamp (the API server's clock).
	// Machina addition.
	// +optional
	DeletionObservedTime *metav1.Time `json:"deletionObservedTime,omitempty"`

	// MachineConditions are machina's own conditions on the machine (for
	// example Drained), in the standard Kubernetes condition shape. They are
	// separate from conditions, which mirrors the Node's conditions as MCM does.
	// Machina addition.
	// +listType=map
	// +listMapKey=type
	// +optional
	MachineConditions []metav1.Condition `json:"machineConditions,omitempty"`
}

// CurrentStatus is the phase of a machine and when it last changed.
type CurrentStatus struct {
	// Phase of the machine; empty while the machine is being created.
	// +optional
	Phase MachinePhase `json:"phase,omitempty"`

	// TimeoutActive is true while a creation or health timeout is running.
	// +optional
	TimeoutActive bool `json:"timeoutActive,omitempty"`

	// LastUpdateTime is when the phase was last updated.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`

	// PreserveExpiryTime is when preservation of the machine ends.
	// +optional
	PreserveExpiryTime *metav1.Time `json:"preserveExpiryTime,omitempty"`
}

// MachinePhase is the lifecycle phase of a machine.
// +kubebuilder:validation:Enum=Pending;Available;Running;Terminating;Unknown;Failed;CrashLoopBackOff;InPlaceUpdating;InPlaceUpdateSuccessful;InPlaceUpdateFailed
type MachinePhase string

// The machine phases. The empty phase means the machine is being created.
const (
	// MachinePending means the VM exists and the node has not joined yet.
	MachinePending MachinePhase = "Pending"
	// MachineAvailable means the VM exists; used when there is no target
	// cluster for the machine to join.
	MachineAvailable MachinePhase = "Available"
	// MachineRunning means the node joined and is healthy.
	MachineRunning MachinePhase = "Running"
	// MachineTerminating means the machine is being deleted.
	MachineTerminating MachinePhase = "Terminating"
	// MachineUnknown means the node is unhealthy or missing.
	MachineUnknown MachinePhase = "Unknown"
	// MachineFailed means a creation or health timeout expired; the owning
	// MachineSet replaces the machine.
	MachineFailed MachinePhase = "Failed"
	// MachineCrashLoopBackOff means creating the VM failed and is retried.
	MachineCrashLoopBackOff MachinePhase = "CrashLoopBackOff"
	// MachineInPlaceUpdating means the node is being updated in place.
	MachineInPlaceUpdating MachinePhase = "InPlaceUpdating"
	// MachineInPlaceUpdateSuccessful means the in-place update succeeded.
	MachineInPlaceUpdateSuccessful MachinePhase = "InPlaceUpdateSuccessful"
	// MachineInPlaceUpdateFailed means the in-place update failed.
	MachineInPlaceUpdateFailed MachinePhase = "InPlaceUpdateFailed"
)

// DeletionStep is a step of the machine deletion flow. The steps run in the
// order listed here; the controller persists the current one in
// status.deletionStep. Machina addition.
// +kubebuilder:validation:Enum=Terminating;GetVMStatus;PreDrainHook;Drain;DeleteVolumeAttachments;PreTerminateHook;DeleteVM;DeleteNode;RemoveFinalizer
type DeletionStep string

// The deletion steps, in order.
const (
	// DeletionStepTerminating sets the phase to Terminating.
	DeletionStepTerminating DeletionStep = "Terminating"
	// DeletionStepGetVMStatus finds the machine's VM and node.
	DeletionStepGetVMStatus DeletionStep = "GetVMStatus"
	// DeletionStepPreDrainHook waits until the machine has no pre-drain
	// hook annotation left.
	DeletionStepPreDrainHook DeletionStep = "PreDrainHook"
	// DeletionStepDrain cordons and drains the node.
	DeletionStepDrain DeletionStep = "Drain"
	// DeletionStepDeleteVolumeAttachments deletes the node's VolumeAttachments
	// after a forced drain and waits until they are gone.
	DeletionStepDeleteVolumeAttachments DeletionStep = "DeleteVolumeAttachments"
	// DeletionStepPreTerminateHook waits until the machine has no
	// pre-terminate hook annotation left.
	DeletionStepPreTerminateHook DeletionStep = "PreTerminateHook"
	// DeletionStepDeleteVM deletes the VM through the driver.
	DeletionStepDeleteVM DeletionStep = "DeleteVM"
	// DeletionStepDeleteNode deletes the Node object.
	DeletionStepDeleteNode DeletionStep = "DeleteNode"
	// DeletionStepRemoveFinalizer removes the machine's finalizer.
	DeletionStepRemoveFinalizer DeletionStep = "RemoveFinalizer"
)

// +kubebuilder:object:root=true

// MachineList is a list of Machines.
type MachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the machines.
	Items []Machine `json:"items"`
}
