package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClassSpec refers to the MachineClass a machine is created from.
type ClassSpec struct {
	// APIGroup of the class; MCM manifests set "machine.sapcloud.io" or leave it empty.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`

	// Kind of the class, "MachineClass".
	// +optional
	Kind string `json:"kind,omitempty"`

	// Name of the MachineClass in the machine's namespace.
	// +optional
	Name string `json:"name,omitempty"`
}

// NodeTemplateSpec is what the Node of a machine should carry: labels,
// annotations and taints, kept in sync with the Node by the machine controller.
type NodeTemplateSpec struct {
	// Metadata of the node: labels and annotations are applied to the Node.
	// The schema keeps unknown fields, as MCM's does, so no metadata key a
	// manifest sets is pruned.
	// +kubebuilder:validation:XPreserveUnknownFields
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec of the node; taints are applied to the Node.
	// +optional
	Spec corev1.NodeSpec `json:"spec,omitempty"`
}

// MachineConfiguration holds the per-machine overrides of the controller's
// timeouts and health settings. It is inlined into MachineSpec, so its fields
// appear directly under spec (spec.drainTimeout, spec.healthTimeout, ...).
// An unset field means the controller's flag value applies.
//
// Durations are Go duration strings ("10m", "2h30m"), from 0s to
// MaxDuration (87600h), of at most 64 characters. The schema checks them
// with CEL's duration(), which is Go's own parser, so every value it admits
// decodes in every Go client; a value stored before the rule still decodes
// (Duration) and is refused by the controllers with an event naming the
// field. The rule never fails to evaluate (the regular expression admits
// only strings whose parse cannot overflow, which within 64 characters all
// durations up to 87600h are): a rule that fails to evaluate is not
// ratcheted by the API server, so no update of an object stored with such a
// value, not even of its status, would go through.
type MachineConfiguration struct {
	// MachineDrainTimeout is how long the node is drained gracefully before the
	// drain is forced; measured from when the controller first saw the
	// machine's deletion (status.deletionObservedTime).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 64 && self.matches('^[-+]?(0|((0*[0-9]{1,5}([.][0-9]*)?|[.][0-9]+)h|(0*[0-9]{1,7}([.][0-9]*)?|[.][0-9]+)m|(0*[0-9]{1,9}([.][0-9]*)?|[.][0-9]+)s|(0*[0-9]{1,12}([.][0-9]*)?|[.][0-9]+)ms|(0*[0-9]{1,15}([.][0-9]*)?|[.][0-9]+)(us|µs|μs)|(0*[0-9]{1,18}([.][0-9]*)?|[.][0-9]+)ns)+)$') && duration(self) >= duration('0s') && duration(self) <= duration('87600h')`,message="must be a Go duration from 0s to 87600h of at most 64 characters, such as 10m or 2h30m"
	// +optional
	MachineDrainTimeout *Duration `json:"drainTimeout,omitempty"`

	// MachineHealthTimeout is how long a joined machine may stay unhealthy before
	// it is declared Failed.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 64 && self.matches('^[-+]?(0|((0*[0-9]{1,5}([.][0-9]*)?|[.][0-9]+)h|(0*[0-9]{1,7}([.][0-9]*)?|[.][0-9]+)m|(0*[0-9]{1,9}([.][0-9]*)?|[.][0-9]+)s|(0*[0-9]{1,12}([.][0-9]*)?|[.][0-9]+)ms|(0*[0-9]{1,15}([.][0-9]*)?|[.][0-9]+)(us|µs|μs)|(0*[0-9]{1,18}([.][0-9]*)?|[.][0-9]+)ns)+)$') && duration(self) >= duration('0s') && duration(self) <= duration('87600h')`,message="must be a Go duration from 0s to 87600h of at most 64 characters, such as 10m or 2h30m"
	// +optional
	MachineHealthTimeout *Duration `json:"healthTimeout,omitempty"`

	// MachineCreationTimeout is how long a machine may take to join the
	// cluster before it is declared Failed; measured from when the controller
	// first saw it being created (status.creationObservedTime).
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 64 && self.matches('^[-+]?(0|((0*[0-9]{1,5}([.][0-9]*)?|[.][0-9]+)h|(0*[0-9]{1,7}([.][0-9]*)?|[.][0-9]+)m|(0*[0-9]{1,9}([.][0-9]*)?|[.][0-9]+)s|(0*[0-9]{1,12}([.][0-9]*)?|[.][0-9]+)ms|(0*[0-9]{1,15}([.][0-9]*)?|[.][0-9]+)(us|µs|μs)|(0*[0-9]{1,18}([.][0-9]*)?|[.][0-9]+)ns)+)$') && duration(self) >= duration('0s') && duration(self) <= duration('87600h')`,message="must be a Go duration from 0s to 87600h of at most 64 characters, such as 10m or 2h30m"
	// +optional
	MachineCreationTimeout *Duration `json:"creationTimeout,omitempty"`

	// MachineInPlaceUpdateTimeout is how long an in-place update may take before
	// it is declared failed.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 64 && self.matches('^[-+]?(0|((0*[0-9]{1,5}([.][0-9]*)?|[.][0-9]+)h|(0*[0-9]{1,7}([.][0-9]*)?|[.][0-9]+)m|(0*[0-9]{1,9}([.][0-9]*)?|[.][0-9]+)s|(0*[0-9]{1,12}([.][0-9]*)?|[.][0-9]+)ms|(0*[0-9]{1,15}([.][0-9]*)?|[.][0-9]+)(us|µs|μs)|(0*[0-9]{1,18}([.][0-9]*)?|[.][0-9]+)ns)+)$') && duration(self) >= duration('0s') && duration(self) <= duration('87600h')`,message="must be a Go duration from 0s to 87600h of at most 64 characters, such as 10m or 2h30m"
	// +optional
	MachineInPlaceUpdateTimeout *Duration `json:"inPlaceUpdateTimeout,omitempty"`

	// MachinePreserveTimeout is how long a preserved machine is kept.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 64 && self.matches('^[-+]?(0|((0*[0-9]{1,5}([.][0-9]*)?|[.][0-9]+)h|(0*[0-9]{1,7}([.][0-9]*)?|[.][0-9]+)m|(0*[0-9]{1,9}([.][0-9]*)?|[.][0-9]+)s|(0*[0-9]{1,12}([.][0-9]*)?|[.][0-9]+)ms|(0*[0-9]{1,15}([.][0-9]*)?|[.][0-9]+)(us|µs|μs)|(0*[0-9]{1,18}([.][0-9]*)?|[.][0-9]+)ns)+)$') && duration(self) >= duration('0s') && duration(self) <= duration('87600h')`,message="must be a Go duration from 0s to 87600h of at most 64 characters, such as 10m or 2h30m"
	// +optional
	MachinePreserveTimeout *Duration `json:"machinePreserveTimeout,omitempty"`

	// MachineExpireAfter is the most a machine of a MachineDeployment may
	// live (Karpenter's expireAfter), counted from when the machine
	// controller first saw it: an older machine is deleted and replaced by
	// its set, one at a time and only while the deployment's maxUnavailable
	// allows one more unavailable machine. Unset or 0: machines never
	// expire. Machina addition.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 64 && self.matches('^[-+]?(0|((0*[0-9]{1,5}([.][0-9]*)?|[.][0-9]+)h|(0*[0-9]{1,7}([.][0-9]*)?|[.][0-9]+)m|(0*[0-9]{1,9}([.][0-9]*)?|[.][0-9]+)s|(0*[0-9]{1,12}([.][0-9]*)?|[.][0-9]+)ms|(0*[0-9]{1,15}([.][0-9]*)?|[.][0-9]+)(us|µs|μs)|(0*[0-9]{1,18}([.][0-9]*)?|[.][0-9]+)ns)+)$') && duration(self) >= duration('0s') && duration(self) <= duration('87600h')`,message="must be a Go duration from 0s to 87600h of at most 64 characters, such as 10m or 2h30m"
	// +optional
	MachineExpireAfter *Duration `json:"expireAfter,omitempty"`

	// DisableHealthTimeout, when true, keeps an unhealthy machine from ever being
	// declared Failed by the health timeout.
	// +optional
	DisableHealthTimeout *bool `json:"disableHealthTimeout,omitempty"`

	// MaxEvictRetries is how many times an eviction is retried while draining.
	// +optional
	MaxEvictRetries *int32 `json:"maxEvictRetries,omitempty"`

	// NodeConditions is a comma-separated list of node condition types that make
	// the machine unhealthy when True (for example "KernelDeadlock,DiskPressure").
	// +optional
	NodeConditions *string `json:"nodeConditions,omitempty"`
}

// MachineTemplateSpec is the template MachineSets and MachineDeployments
// create machines from.
type MachineTemplateSpec struct {
	// Metadata of the machines created from the template. The schema keeps
	// unknown fields, as MCM's does, so no metadata key is pruned.
	// +kubebuilder:validation:XPreserveUnknownFields
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec of the machines created from the template.
	// +optional
	Spec MachineSpec `json:"spec,omitempty"`
}

// MachineSummary summarises a machine whose last operation failed; MachineSets
// and MachineDeployments list them in their status.
type MachineSummary struct {
	// Name of the machine.
	// +optional
	Name string `json:"name,omitempty"`

	// ProviderID of the machine's VM.
	// +optional
	ProviderID string `json:"providerID,omitempty"`

	// LastOperation of the machine.
	// +optional
	LastOperation LastOperation `json:"lastOperation,omitempty"`

	// OwnerRef is the name of the machine's owning MachineSet.
	// +optional
	OwnerRef string `json:"ownerRef,omitempty"`
}

// LastOperation records the last operation the controller performed on an
// object, for humans and for MCM clients: the cluster-autoscaler reads
// errorCode to back off early. Controllers never branch on description; they
// use structured fields (see MachineStatus.DeletionStep).
type LastOperation struct {
	// Description of the operation, human-readable.
	// +optional
	Description string `json:"description,omitempty"`

	// ErrorCode is the gRPC code name (for example "ResourceExhausted") of the
	// driver error that failed the operation, if any.
	// +optional
	ErrorCode string `json:"errorCode,omitempty"`

	// LastUpdateTime is when the operation was last updated.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`

	// State of the operation.
	// +optional
	State MachineState `json:"state,omitempty"`

	// Type of the operation.
	// +optional
	Type MachineOperationType `json:"type,omitempty"`
}

// MachineState is the state of an operation.
// +kubebuilder:validation:Enum=Processing;Failed;Successful
type MachineState string

// The states of an operation.
const (
	// MachineStateProcessing means the operation is still running.
	MachineStateProcessing MachineState = "Processing"
	// MachineStateFailed means the operation failed; it may be retried.
	MachineStateFailed MachineState = "Failed"
	// MachineStateSuccessful means the operation completed.
	MachineStateSuccessful MachineState = "Successful"
)

// MachineOperationType is the kind of operation performed on a machine.
// +kubebuilder:validation:Enum=Create;Update;InPlaceUpdate;DrainNode;HealthCheck;Delete
type MachineOperationType string

// The operation types.
const (
	// MachineOperationCreate is the creation of the machine's VM and node.
	MachineOperationCreate MachineOperationType = "Create"
	// MachineOperationUpdate is an update of the machine.
	MachineOperationUpdate MachineOperationType = "Update"
	// MachineOperationInPlaceUpdate is an in-place update of the machine's node.
	MachineOperationInPlaceUpdate MachineOperationType = "InPlaceUpdate"
	// MachineOperationDrainNode is the drain of the machine's node.
	MachineOperationDrainNode MachineOperationType = "DrainNode"
	// MachineOperationHealthCheck is a health check of the machine's node.
	MachineOperationHealthCheck MachineOperationType = "HealthCheck"
	// MachineOperationDelete is the deletion of the machine.
	MachineOperationDelete MachineOperationType = "Delete"
)

// ConditionStatus is the status of a MachineSet or MachineDeployment condition.
// +kubebuilder:validation:Enum=True;False;Unknown
type ConditionStatus string

// The condition statuses.
const (
	// ConditionTrue means the object is in the condition.
	ConditionTrue ConditionStatus = "True"
	// ConditionFalse means the object is not in the condition.
	ConditionFalse ConditionStatus = "False"
	// ConditionUnknown means the controller cannot tell.
	ConditionUnknown ConditionStatus = "Unknown"
)
