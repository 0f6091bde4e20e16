package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mcd
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.labelSelector
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`,description="Number of ready machines."
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,description="Number of desired machines."
// +kubebuilder:printcolumn:name="Up-to-date",type=integer,JSONPath=`.status.updatedReplicas`,description="Number of machines with the current template."
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`,description="Number of machines ready for at least minReadySeconds."
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time since the machine deployment was created."

// MachineDeployment rolls out machines through MachineSets, like a
// Deployment rolls out pods through ReplicaSets.
type MachineDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired machine deployment.
	// +optional
	Spec MachineDeploymentSpec `json:"spec,omitempty"`

	// Status is the machine deployment as last observed by the controller.
	// +optional
	Status MachineDeploymentStatus `json:"status,omitempty"`
}

// MachineDeploymentSpec is the desired state of a MachineDeployment.
type MachineDeploymentSpec struct {
	// Replicas is the number of machines wanted. It defaults to 0 in the
	// schema, so that a stored object always has it (the JSON tag omits a
	// zero): the /scale subresource updates only a field that exists, and
	// `kubectl scale` of a deployment at zero would fail without it.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:default=0
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// Selector selects the machines (and MachineSets) of the deployment; it must
	// match the template's labels.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Template is what new machines are created from. A change to it starts a
	// rollout.
	Template MachineTemplateSpec `json:"template"`

	// Strategy is how old machines are replaced by new ones.
	// +optional
	// +patchStrategy=retainKeys
	Strategy MachineDeploymentStrategy `json:"strategy,omitempty" patchStrategy:"retainKeys"`

	// MinReadySeconds is how long a machine must be ready to count as available.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`

	// RevisionHistoryLimit is how many old MachineSets are kept for rollback.
	// +kubebuilder:validation:Minimum=0
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`

	// Paused stops the controller from rolling out template changes.
	// +optional
	Paused bool `json:"paused,omitempty"`

	// RollbackTo is deprecated: the revision to roll back to; cleared once done.
	// +optional
	RollbackTo *RollbackConfig `json:"rollbackTo,omitempty"`

	// ProgressDeadlineSeconds is how long a rollout may go without progress
	// before the Progressing condition reports ProgressDeadlineExceeded.
	// Unset means no deadline.
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// AutoPreserveFailedMachineMax is how many Failed machines of the deployment
	// the controller may preserve automatically.
	// +kubebuilder:validation:Minimum=0
	// +optional
	AutoPreserveFailedMachineMax *int32 `json:"autoPreserveFailedMachineMax,omitempty"`

	// RolloutAfter asks for a rollout without a template change (Cluster API's
	// spec.rollout.after): once this time has passed, every machine created
	// from a machine set older than it is replaced (or, with InPlaceUpdate,
	// updated in place) by the deployment's strategy. `kubectl machina rollout
	// restart` sets it to the current time. Machina addition.
	// +optional
	RolloutAfter *metav1.Time `json:"rolloutAfter,omitempty"`

	// Disruption says which voluntary disruptions, besides rollouts, the
	// deployment may make (docs/disruption.md). Machina addition.
	// +optional
	Disruption *MachineDeploymentDisruption `json:"disruption,omitempty"`
}

// MachineDeploymentDisruption holds a deployment's disruption policy.
type MachineDeploymentDisruption struct {
	// ReplaceDrifted replaces, one at a time within maxUnavailable once a
	// rollout is complete, the machines whose VM drifted from their
	// MachineClass: the class changed and the driver answered UpdateMachine
	// with needs_new_vm (condition ClassUpdated False, reason NeedsNewVM).
	// Off by default: such a VM keeps its old contents until a rollout
	// replaces it.
	// +optional
	ReplaceDrifted bool `json:"replaceDrifted,omitempty"`

	// Budgets cap how many of the deployment's machines it disrupts at once
	// for the reasons they name (Karpenter's disruption budgets): while
	// budgets are active, the smallest of those that name a reason holds.
	// Disruptions a user asks for (a scale-down, a deletion) and the
	// replacement of failed machines are not counted nor held.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	Budgets []DisruptionBudget `json:"budgets,omitempty"`
}

// DisruptionReason is what a voluntary disruption is for.
// +kubebuilder:validation:Enum=Rollout;InPlace;Expired;Drifted;ConfigUpdate
type DisruptionReason string

// The reasons of voluntary disruption a budget may name.
const (
	// DisruptionReasonRollout: a RollingUpdate or Recreate rollout deletes
	// old machines.
	DisruptionReasonRollout DisruptionReason = "Rollout"
	// DisruptionReasonInPlace: an InPlaceUpdate rollout drains and updates
	// nodes.
	DisruptionReasonInPlace DisruptionReason = "InPlace"
	// DisruptionReasonExpired: a machine older than expireAfter is deleted.
	DisruptionReasonExpired DisruptionReason = "Expired"
	// DisruptionReasonDrifted: a machine drifted from its class is deleted
	// (replaceDrifted).
	DisruptionReasonDrifted DisruptionReason = "Drifted"
	// DisruptionReasonConfigUpdate: a MachineConfigPool gives its nodes a
	// new rendered configuration (a pool's budgets only).
	DisruptionReasonConfigUpdate DisruptionReason = "ConfigUpdate"
)

// DisruptionBudget caps the machines disrupted at once for some reasons,
// always or in a recurring window.
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(self.duration)",message="schedule and duration go together"
type DisruptionBudget struct {
	// Machines is how many machines may be disrupted at once: a number, or a
	// percentage of the deployment's replicas (a pool's nodes) rounded up
	// (as Karpenter's nodes). 0 disrupts none.
	// A value that is neither is refused by the controller (Progressing
	// False, reason InvalidDisruptionBudget).
	// +kubebuilder:validation:XIntOrString
	Machines intstr.IntOrString `json:"machines"`
	// Reasons are the disruptions the budget caps; none means every reason.
	// +optional
	// +kubebuilder:validation:MaxItems=5
	Reasons []DisruptionReason `json:"reasons,omitempty"`
	// Schedule (cron syntax, five fields, in UTC; @daily and such too) is
	// when the budget's window opens; it stays open for Duration. Without
	// one the budget always holds.
	// +optional
	// +kubebuilder:validation:MaxLength=100
	Schedule string `json:"schedule,omitempty"`
	// Duration is how long the window stays open after each start.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 64 && self.matches('^[-+]?(0|((0*[0-9]{1,5}([.][0-9]*)?|[.][0-9]+)h|(0*[0-9]{1,7}([.][0-9]*)?|[.][0-9]+)m|(0*[0-9]{1,9}([.][0-9]*)?|[.][0-9]+)s|(0*[0-9]{1,12}([.][0-9]*)?|[.][0-9]+)ms|(0*[0-9]{1,15}([.][0-9]*)?|[.][0-9]+)(us|µs|μs)|(0*[0-9]{1,18}([.][0-9]*)?|[.][0-9]+)ns)+)$') && duration(self) >= duration('0s') && duration(self) <= duration('87600h')`,message="must be a Go duration from 0s to 87600h of at most 64 characters, such as 10m or 2h30m"
	// +optional
	Duration *Duration `json:"duration,omitempty"`
}

// MachineDeploymentStrategy is how a MachineDeployment replaces machines.
type MachineDeploymentStrategy struct {
	// Type of the strategy: Recreate, RollingUpdate or InPlaceUpdate.
	// +optional
	Type MachineDeploymentStrategyType `json:"type,omitempty"`

	// RollingUpdate configures the RollingUpdate strategy.
	// +optional
	RollingUpdate *RollingUpdateMachineDeployment `json:"rollingUpdate,omitempty"`

	// InPlaceUpdate configures the InPlaceUpdate strategy.
	// +optional
	InPlaceUpdate *InPlaceUpdateMachineDeployment `json:"inPlaceUpdate,omitempty"`
}

// MachineDeploymentStrategyType is the type of a MachineDeployment strategy.
// +kubebuilder:validation:Enum=Recreate;RollingUpdate;InPlaceUpdate
type MachineDeploymentStrategyType string

// The MachineDeployment strategy types.
const (
	// RecreateMachineDeploymentStrategyType deletes all old machines before
	// creating new ones.
	RecreateMachineDeploymentStrategyType MachineDeploymentStrategyType = "Recreate"
	// RollingUpdateMachineDeploymentStrategyType replaces machines gradually,
	// within maxSurge and maxUnavailable.
	RollingUpdateMachineDeploymentStrategyType MachineDeploymentStrategyType = "RollingUpdate"
	// InPlaceUpdateMachineDeploymentStrategyType updates the nodes of existing
	// machines in place.
	InPlaceUpdateMachineDeploymentStrategyType MachineDeploymentStrategyType = "InPlaceUpdate"
)

// UpdateConfiguration bounds how many machines a rollout may add or take away
// at once.
type UpdateConfiguration struct {
	// MaxUnavailable is how many machines may be unavailable during the update:
	// a number, or a percentage of replicas rounded down. Default 0 (when unset).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^[0-9]+%$`
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// MaxSurge is how many machines may exist above replicas during the update:
	// a number, or a percentage of replicas rounded up. Default 1 (when unset).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^[0-9]+%$`
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
}

// RollingUpdateMachineDeployment configures the RollingUpdate strategy.
type RollingUpdateMachineDeployment struct {
	UpdateConfiguration `json:",inline"`
}

// InPlaceUpdateMachineDeployment configures the InPlaceUpdate strategy.
type InPlaceUpdateMachineDeployment struct {
	UpdateConfiguration `json:",inline"`

	// OrchestrationType is who selects the nodes to update: Auto (the
	// controller, up to maxUnavailable at a time) or Manual (the user labels
	// them).
	// +optional
	OrchestrationType OrchestrationType `json:"orchestrationType,omitempty"`
}

// OrchestrationType is who selects the nodes of an in-place update.
// +kubebuilder:validation:Enum=Auto;Manual
type OrchestrationType string

// The orchestration types.
const (
	// OrchestrationTypeAuto lets the controller select the nodes to update.
	OrchestrationTypeAuto OrchestrationType = "Auto"
	// OrchestrationTypeManual lets the user select the nodes to update.
	OrchestrationTypeManual OrchestrationType = "Manual"
)

// RollbackConfig is the revision a MachineDeployment rolls back to.
type RollbackConfig struct {
	// Revision to roll back to; 0 means the previous one.
	// +optional
	Revision int64 `json:"revision,omitempty"`
}

// MachineDeploymentStatus is the observed state of a MachineDeployment.
type MachineDeploymentStatus struct {
	// ObservedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Replicas is the number of non-terminated machines of the deployment.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// UpdatedReplicas is the number of non-terminated machines with the current template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`

	// ReadyReplicas is the number of ready machines.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas is the number of machines ready for at least minReadySeconds.
	// +optional
	AvailableReplicas int32 `json:"availableReplicas,omitempty"`

	// PreservedFailedReplicas is the number of Failed machines kept by preservation.
	// +optional
	PreservedFailedReplicas int32 `json:"preservedFailedReplicas,omitempty"`

	// UnavailableReplicas is the number of machines still missing for full
	// availability: machines not yet available or not yet created.
	// +optional
	UnavailableReplicas int32 `json:"unavailableReplicas,omitempty"`

	// Conditions of the machine deployment.
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +optional
	Conditions []MachineDeploymentCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// CollisionCount counts template hash collisions; the controller uses it to
	// name new MachineSets uniquely.
	// +optional
	CollisionCount *int32 `json:"collisionCount,omitempty"`

	// FailedMachines summarises the machines whose last operation failed.
	// +optional
	FailedMachines []*MachineSummary `json:"failedMachines,omitempty"`

	// LabelSelector is spec.selector in its string form, published so that the
	// /scale subresource reports a selector (the HorizontalPodAutoscaler needs
	// one). Machina addition.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// MachineDeploymentConditionType is the type of a MachineDeployment condition.
type MachineDeploymentConditionType string

// The MachineDeployment condition types.
const (
	// MachineDeploymentAvailable means at least the minimum number of machines
	// has been available for minReadySeconds.
	MachineDeploymentAvailable MachineDeploymentConditionType = "Available"
	// MachineDeploymentProgressing means a rollout is making progress, or has
	// completed.
	MachineDeploymentProgressing MachineDeploymentConditionType = "Progressing"
	// MachineDeploymentReplicaFailure means a machine could not be created or
	// deleted.
	MachineDeploymentReplicaFailure MachineDeploymentConditionType = "ReplicaFailure"
	// MachineDeploymentFrozen means the safety controller froze the deployment.
	MachineDeploymentFrozen MachineDeploymentConditionType = "Frozen"
)

// MachineDeploymentCondition is one condition of a MachineDeployment.
type MachineDeploymentCondition struct {
	// Type of the condition.
	Type MachineDeploymentConditionType `json:"type"`

	// Status of the condition: True, False or Unknown.
	Status ConditionStatus `json:"status"`

	// LastUpdateTime is when the condition was last updated.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`

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

// MachineDeploymentList is a list of MachineDeployments.
type MachineDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the machine deployments.
	Items []MachineDeployment `json:"items"`
}
