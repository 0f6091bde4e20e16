package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	machinev1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// MachineConfigPool groups nodes that run the same configuration: the
// MachineConfigs its machineConfigSelector selects, rendered into one
// MachineConfig and rolled out to the nodes its nodeSelector (or
// machineOwnerRef) selects, maxUnavailable at a time.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=mcp
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Config",type=string,JSONPath=`.status.configuration.name`
// +kubebuilder:printcolumn:name="Updated",type=string,JSONPath=`.status.conditions[?(@.type=="Updated")].status`,description="When all the machines in the pool are updated to the correct machine config."
// +kubebuilder:printcolumn:name="Updating",type=string,JSONPath=`.status.conditions[?(@.type=="Updating")].status`,description="When at least one of machine is not either not updated or is in the process of updating to the desired machine config."
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`,description="When progress is blocked on updating one or more nodes or the pool configuration is failing."
// +kubebuilder:printcolumn:name="MachineCount",type=integer,JSONPath=`.status.machineCount`,description="Total number of machines in the machine config pool"
// +kubebuilder:printcolumn:name="ReadyMachineCount",type=integer,JSONPath=`.status.readyMachineCount`,description="Total number of ready machines targeted by the pool"
// +kubebuilder:printcolumn:name="UpdatedMachineCount",type=integer,JSONPath=`.status.updatedMachineCount`,description="Total number of machines targeted by the pool that have the CurrentMachineConfig as their config"
// +kubebuilder:printcolumn:name="DegradedMachineCount",type=integer,JSONPath=`.status.degradedMachineCount`,description="Total number of machines marked degraded (or unreconcilable)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineConfigPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MachineConfigPoolSpec   `json:"spec,omitempty"`
	Status MachineConfigPoolStatus `json:"status,omitempty"`
}

// MachineConfigPoolSpec is what the user asks of a pool.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.nodeSelector) && has(self.machineOwnerRef))",message="nodeSelector and machineOwnerRef are mutually exclusive"
type MachineConfigPoolSpec struct {
	// MachineConfigSelector selects the MachineConfigs rendered for the
	// pool, usually by the label machineconfiguration.openshift.io/role.
	// A pool without it renders nothing.
	// +optional
	MachineConfigSelector *metav1.LabelSelector `json:"machineConfigSelector,omitempty"`

	// NodeSelector selects the pool's nodes. An empty selector ({}) would
	// select every node and is refused by the update controller.
	// +optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// MachineOwnerRef is a machina extension: the pool's nodes are the
	// nodes of the machines of this MachineSet or MachineDeployment, instead
	// of nodeSelector's.
	// +optional
	MachineOwnerRef *MachineOwnerReference `json:"machineOwnerRef,omitempty"`

	// Paused stops the rollout of a new configuration to the pool's nodes.
	// Rendering and spec.configuration still move.
	// +optional
	Paused bool `json:"paused"`

	// MaxUnavailable is how many nodes (a number, or a percentage of the
	// pool's nodes rounded down) may be updating or unavailable at once.
	// Unset means 1; 0 is treated as 1.
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// Configuration is the target rendered MachineConfig, written by the
	// render controller.
	// +optional
	Configuration MachineConfigPoolStatusConfiguration `json:"configuration"`

	// NodeDisruptionPolicy is a machina extension, shaped like MCO's
	// MachineConfiguration spec.nodeDisruptionPolicy but per pool: what a
	// node of the pool does after a change of a file, a unit or the SSH
	// keys. Entries here come before the defaults (docs/machine-config.md,
	// "Activating a change"); a change no entry covers reboots the node.
	// Kernel arguments, kernel type, OS image and extensions always reboot.
	// +optional
	NodeDisruptionPolicy *NodeDisruptionPolicy `json:"nodeDisruptionPolicy,omitempty"`

	// Disruption is a machina extension: budgets that cap how many of the
	// pool's nodes update at once, always or in cron windows, below
	// maxUnavailable (a MachineDeployment's spec.disruption.budgets, reason
	// ConfigUpdate; a budget naming only other reasons does not apply).
	// +optional
	Disruption *PoolDisruption `json:"disruption,omitempty"`

	// PinnedImageSets names the PinnedImageSets whose images MCO pulls and
	// pins on the pool's nodes (gate PinnedImages). machina pins no images:
	// a pool that names any is Degraded, reason UnsupportedField, the
	// message naming spec.pinnedImageSets; its rollout goes on.
	// +optional
	// +listType=atomic
	PinnedImageSets []PinnedImageSetRef `json:"pinnedImageSets,omitempty"`

	// OSImageStream names the OS image stream MCO takes the pool's default
	// OS image from (gate OSStreams). machina has no OS image streams: a
	// pool that names one is Degraded, reason UnsupportedField, the message
	// naming spec.osImageStream; its rollout goes on, with the OS image its
	// MachineConfigs set.
	// +optional
	OSImageStream *OSImageStreamReference `json:"osImageStream,omitempty"`
}

// PoolDisruption holds a pool's disruption budgets.
type PoolDisruption struct {
	// Budgets, as a MachineDeployment's; percentages are of the pool's
	// nodes.
	// +optional
	// +kubebuilder:validation:MaxItems=50
	Budgets []machinev1alpha1.DisruptionBudget `json:"budgets,omitempty"`
}

// PinnedImageSetRef names a PinnedImageSet.
type PinnedImageSetRef struct {
	// Name of the PinnedImageSet.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// OSImageStreamReference names an OS image stream.
type OSImageStreamReference struct {
	// Name of the stream.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// MachineOwnerReference names a MachineSet or MachineDeployment
// (machine.sapcloud.io/v1alpha1) whose machines' nodes form a pool.
type MachineOwnerReference struct {
	// Kind is MachineSet or MachineDeployment.
	// +kubebuilder:validation:Enum=MachineSet;MachineDeployment
	Kind string `json:"kind"`
	// Namespace of the MachineSet or MachineDeployment.
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// Name of the MachineSet or MachineDeployment.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// MachineConfigPoolStatusConfiguration names a rendered MachineConfig and
// the MachineConfigs it was rendered from.
type MachineConfigPoolStatusConfiguration struct {
	corev1.ObjectReference `json:",inline"`

	// Source lists the MachineConfigs the rendered one was made from, in
	// merge order.
	// +optional
	Source []corev1.ObjectReference `json:"source,omitempty"`
}

// MachineConfigPoolStatus is what the controllers observe of a pool.
type MachineConfigPoolStatus struct {
	// ObservedGeneration is the generation of the spec last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Configuration is the rendered MachineConfig every node of the pool
	// runs: it is copied from spec.configuration once the pool is updated.
	// +optional
	Configuration MachineConfigPoolStatusConfiguration `json:"configuration"`

	// The counts are optional in the schema, so that a controller writing
	// only a condition (the render controller) writes a valid status.

	// MachineCount is the number of nodes in the pool.
	// +optional
	MachineCount int32 `json:"machineCount"`
	// UpdatedMachineCount is the number of nodes that run the target
	// configuration (desired = current = target, state Done).
	// +optional
	UpdatedMachineCount int32 `json:"updatedMachineCount"`
	// ReadyMachineCount is the number of updated nodes that are also Ready
	// and schedulable.
	// +optional
	ReadyMachineCount int32 `json:"readyMachineCount"`
	// UnavailableMachineCount is the number of nodes not ready or updating.
	// +optional
	UnavailableMachineCount int32 `json:"unavailableMachineCount"`
	// DegradedMachineCount is the number of nodes whose state is Degraded or
	// Unreconcilable.
	// +optional
	DegradedMachineCount int32 `json:"degradedMachineCount"`

	// Conditions: Updated, Updating, Degraded, NodeDegraded, RenderDegraded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// CertExpirys is MCO's record of the expiry of the certificates in
	// ControllerConfig's bundles. machina has no ControllerConfig and
	// writes none; the field is kept so that MCO's clients decode it.
	// +listType=atomic
	// +optional
	CertExpirys []CertExpiry `json:"certExpirys,omitempty"`

	// PoolSynchronizersStatus is MCO's progress of the node-level
	// synchronizers that are not MachineConfigs (PinnedImageSets). machina
	// has none (spec.pinnedImageSets is refused) and writes none.
	// +listType=map
	// +listMapKey=poolSynchronizerType
	// +optional
	PoolSynchronizersStatus []PoolSynchronizerStatus `json:"poolSynchronizersStatus,omitempty"`
}

// CertExpiry is a certificate of a bundle and when it expires.
type CertExpiry struct {
	// Bundle is the name of the bundle the certificate is in.
	Bundle string `json:"bundle"`
	// Subject is the certificate's subject.
	Subject string `json:"subject"`
	// Expiry is when the certificate stops being valid.
	// +optional
	// +nullable
	Expiry *metav1.Time `json:"expiry,omitempty"`
}

// PoolSynchronizerType is a kind of pool synchronizer.
// +kubebuilder:validation:Enum=PinnedImageSets
type PoolSynchronizerType string

// PoolSynchronizerStatus is the progress of one pool synchronizer.
type PoolSynchronizerStatus struct {
	PoolSynchronizerType PoolSynchronizerType `json:"poolSynchronizerType"`
	// +kubebuilder:validation:Minimum=0
	MachineCount int64 `json:"machineCount"`
	// +kubebuilder:validation:Minimum=0
	UpdatedMachineCount int64 `json:"updatedMachineCount"`
	// +kubebuilder:validation:Minimum=0
	ReadyMachineCount int64 `json:"readyMachineCount"`
	// +kubebuilder:validation:Minimum=0
	AvailableMachineCount int64 `json:"availableMachineCount"`
	// +kubebuilder:validation:Minimum=0
	UnavailableMachineCount int64 `json:"unavailableMachineCount"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// MachineConfigPoolList is a list of MachineConfigPools.
//
// +kubebuilder:object:root=true
type MachineConfigPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineConfigPool `json:"items"`
}

// NodeDisruptionPolicy says what a node does after a change of its
// configuration, by what changed.
type NodeDisruptionPolicy struct {
	// Files: a change of the file at path, or of a file under the
	// directory path, takes these actions. The longest matching path wins.
	// +optional
	// +listType=map
	// +listMapKey=path
	Files []NodeDisruptionPolicyFile `json:"files,omitempty"`
	// Units: a change of the systemd unit name (its file, drop-ins,
	// enablement or mask) takes these actions.
	// +optional
	// +listType=map
	// +listMapKey=name
	Units []NodeDisruptionPolicyUnit `json:"units,omitempty"`
	// SSHKey: a change of the core user's SSH keys takes these actions.
	// +optional
	SSHKey *NodeDisruptionPolicySSHKey `json:"sshkey,omitempty"`
}

// NodeDisruptionPolicyFile is the policy of one file path.
type NodeDisruptionPolicyFile struct {
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path"`
	// +kubebuilder:validation:MinItems=1
	Actions []NodeDisruptionAction `json:"actions"`
}

// NodeDisruptionPolicyUnit is the policy of one systemd unit.
type NodeDisruptionPolicyUnit struct {
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// +kubebuilder:validation:MinItems=1
	Actions []NodeDisruptionAction `json:"actions"`
}

// NodeDisruptionPolicySSHKey is the policy of the SSH keys.
type NodeDisruptionPolicySSHKey struct {
	// +kubebuilder:validation:MinItems=1
	Actions []NodeDisruptionAction `json:"actions"`
}

// NodeDisruptionAction is one action: Reboot (drain, then reboot), Drain
// (drain and uncordon, no reboot), Reload or Restart of a unit,
// DaemonReload, or None.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'Reload' ? has(self.reload) : !has(self.reload)",message="reload is required for type Reload, and only for it"
// +kubebuilder:validation:XValidation:rule="self.type == 'Restart' ? has(self.restart) : !has(self.restart)",message="restart is required for type Restart, and only for it"
type NodeDisruptionAction struct {
	// +kubebuilder:validation:Enum=Reboot;Drain;Reload;Restart;DaemonReload;None
	Type NodeDisruptionActionType `json:"type"`
	// +optional
	Reload *NodeDisruptionService `json:"reload,omitempty"`
	// +optional
	Restart *NodeDisruptionService `json:"restart,omitempty"`
}

// NodeDisruptionActionType is the kind of a NodeDisruptionAction.
type NodeDisruptionActionType string

// The action types, as MCO names them.
const (
	ActionReboot       NodeDisruptionActionType = "Reboot"
	ActionDrain        NodeDisruptionActionType = "Drain"
	ActionReload       NodeDisruptionActionType = "Reload"
	ActionRestart      NodeDisruptionActionType = "Restart"
	ActionDaemonReload NodeDisruptionActionType = "DaemonReload"
	ActionNone         NodeDisruptionActionType = "None"
)

// NodeDisruptionService names the unit a Reload or Restart acts on.
type NodeDisruptionService struct {
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9:._\\@-]+\.(service|socket|target|timer|path|mount)$`
	ServiceName string `json:"serviceName"`
}
