package v1

import corev1 "k8s.io/api/core/v1"

// Prefix is the prefix of the labels and annotations of this API.
const Prefix = "machineconfiguration.openshift.io/"

// Node annotations of the handshake between the pool update controller and
// the node agent. The names are MCO's (pkg/daemon/constants/constants.go in
// openshift/machine-config-operator), so tools reading them work unchanged.
const (
	// CurrentConfigAnnotation is the rendered MachineConfig in effect on the
	// node. Written by the node agent.
	CurrentConfigAnnotation = Prefix + "currentConfig"
	// DesiredConfigAnnotation is the rendered MachineConfig the node should
	// run. Written by the update controller.
	DesiredConfigAnnotation = Prefix + "desiredConfig"
	// StateAnnotation is the node agent's state: one of the MachineConfigState
	// values. Written by the node agent.
	StateAnnotation = Prefix + "state"
	// ReasonAnnotation is the error behind a Degraded or Unreconcilable
	// state (at most ReasonMaxLength characters); empty on Working and Done.
	ReasonAnnotation = Prefix + "reason"
	// DesiredDrainAnnotation is the node agent's request: DrainRequestPrefix
	// or UncordonRequestPrefix followed by the rendered MachineConfig's name.
	DesiredDrainAnnotation = Prefix + "desiredDrain"
	// LastAppliedDrainAnnotation echoes DesiredDrainAnnotation once the
	// controller has drained or uncordoned the node.
	LastAppliedDrainAnnotation = Prefix + "lastAppliedDrain"
	// PostConfigActionAnnotation is set to PostConfigActionRebooting before
	// the node agent reboots the node.
	PostConfigActionAnnotation = Prefix + "post-config-action"
	// ControlPlaneTopologyAnnotation is the cluster's control plane topology,
	// read by the node agent.
	ControlPlaneTopologyAnnotation = Prefix + "controlPlaneTopology"
	// LastActionsAnnotation is a machina addition: what the node agent did
	// to activate currentConfig ("none", "daemon-reload, restart
	// kubelet.service", "drain, reboot"), written with state=Done.
	LastActionsAnnotation = Prefix + "last-actions"
	// SSHAnnotation is set to SSHAccessed when someone logged in to the node.
	SSHAnnotation = Prefix + "ssh"
)

// Values of the node annotations.
const (
	// MachineConfigStateDone: the node runs currentConfig and is idle.
	MachineConfigStateDone = "Done"
	// MachineConfigStateWorking: the node agent is applying desiredConfig.
	MachineConfigStateWorking = "Working"
	// MachineConfigStateDegraded: applying failed; reason says why.
	MachineConfigStateDegraded = "Degraded"
	// MachineConfigStateUnreconcilable: desiredConfig cannot be applied in
	// place (for example it changes disks); reason says why.
	MachineConfigStateUnreconcilable = "Unreconcilable"

	// ReasonMaxLength is the longest ReasonAnnotation value.
	ReasonMaxLength = 2000

	// DrainRequestPrefix starts a DesiredDrainAnnotation asking for a drain.
	DrainRequestPrefix = "drain-"
	// UncordonRequestPrefix starts a DesiredDrainAnnotation asking for an
	// uncordon.
	UncordonRequestPrefix = "uncordon-"

	// PostConfigActionRebooting is the PostConfigActionAnnotation value
	// before a reboot.
	PostConfigActionRebooting = "Rebooting"

	// SSHAccessed is the SSHAnnotation value.
	SSHAccessed = "accessed"
)

// NodeUpdateInProgressTaint is put on a pool's nodes whose desiredConfig is
// not yet the pool's target, so that new pods prefer other nodes.
var NodeUpdateInProgressTaint = corev1.Taint{Key: "UpdateInProgress", Effect: corev1.TaintEffectPreferNoSchedule}

// Labels.
const (
	// RoleLabel on a MachineConfig names the pool (role) it belongs to; the
	// pools' machineConfigSelectors usually select on it.
	RoleLabel = Prefix + "role"
	// WorkerRole is the role of the default worker pool. Its MachineConfigs
	// are merged first, so a custom pool's own ones override them.
	WorkerRole = "worker"
	// MasterRole is the role of the control-plane pool. A node the master
	// pool chooses is driven by it, whatever other pool chooses it too.
	MasterRole = "master"
)

// Annotations on the MachineConfigs the controllers generate.
const (
	// GeneratedByControllerVersionAnnotation is the version of the controller
	// that generated a MachineConfig; fragments carrying it are not the
	// user's (their osImageURL does not override).
	GeneratedByControllerVersionAnnotation = Prefix + "generated-by-controller-version"
	// ReleaseImageVersionAnnotation is the release a MachineConfig was
	// generated for.
	ReleaseImageVersionAnnotation = Prefix + "release-image-version"
	// OSImageURLOverriddenAnnotation is "true" on a rendered MachineConfig
	// whose osImageURL came from a user's fragment.
	OSImageURLOverriddenAnnotation = Prefix + "os-image-url-overridden"
	// MCNameSuffixAnnotation on a KubeletConfig is the suffix ("", "1" ...
	// "9") of the MachineConfig names it generates.
	MCNameSuffixAnnotation = Prefix + "mc-name-suffix"
	// RenderedFromPoolAnnotation is a machina addition on a rendered
	// MachineConfig: the pool it was rendered for. The owner reference says
	// the same; the annotation survives the pool's deletion.
	RenderedFromPoolAnnotation = Prefix + "rendered-from-pool"
	// UnreferencedSinceAnnotation is a machina addition on a rendered
	// MachineConfig that no pool and no Node refers to: since when (RFC
	// 3339). The collector deletes it a grace period later.
	UnreferencedSinceAnnotation = Prefix + "unreferenced-since"
)

// Finalizers.
const (
	// KubeletConfigFinalizer keeps a KubeletConfig until the MachineConfigs
	// generated from it are deleted.
	KubeletConfigFinalizer = Prefix + "kubelet-config"
	// ContainerRuntimeConfigFinalizer keeps a ContainerRuntimeConfig until
	// the MachineConfigs generated from it are deleted.
	ContainerRuntimeConfigFinalizer = Prefix + "container-runtime-config"
)

// MachineConfigPool condition types.
const (
	// PoolUpdated: every node of the pool runs the target configuration and
	// is ready.
	PoolUpdated = "Updated"
	// PoolUpdating: some node does not yet run the target configuration.
	PoolUpdating = "Updating"
	// PoolDegraded: NodeDegraded or RenderDegraded.
	PoolDegraded = "Degraded"
	// PoolNodeDegraded: at least one node is Degraded or Unreconcilable; the
	// message names the nodes and their reasons.
	PoolNodeDegraded = "NodeDegraded"
	// PoolRenderDegraded: the pool's MachineConfigs cannot be rendered; the
	// message names the fragment and why. The last good rendering stays.
	PoolRenderDegraded = "RenderDegraded"
)

// ControllerConfig condition types (MCO's names).
const (
	// TemplateControllerCompleted: the base MachineConfigs of every role
	// are written.
	TemplateControllerCompleted = "TemplateControllerCompleted"
	// TemplateControllerFailing: they are not; the message says why.
	TemplateControllerFailing = "TemplateControllerFailing"
)

// Labels of the pools the template controller creates, as MCO's: the
// selectors of KubeletConfigs and ContainerRuntimeConfigs written for
// OpenShift select them.
const (
	// PoolOperatorLabelPrefix + role labels the built-in pool of role.
	PoolOperatorLabelPrefix = "pools.operator.machineconfiguration.openshift.io/"
	// BuiltInPoolLabel marks a pool the controller created.
	BuiltInPoolLabel = Prefix + "mco-built-in"
)

// KubeletConfig condition types.
const (
	// KubeletConfigSuccess: the generated MachineConfigs are written.
	KubeletConfigSuccess = "Success"
	// KubeletConfigFailure: they are not; the message says why.
	KubeletConfigFailure = "Failure"
)

// ContainerRuntimeConfig condition types (MCO's names).
const (
	// ContainerRuntimeConfigSuccess: the generated MachineConfigs are
	// written.
	ContainerRuntimeConfigSuccess = "Success"
	// ContainerRuntimeConfigFailure: they are not; the message says why.
	ContainerRuntimeConfigFailure = "Failure"
)

// Rendered MachineConfigs.
const (
	// RenderedPrefix starts the name of every rendered MachineConfig:
	// rendered-<pool>-<hash>.
	RenderedPrefix = "rendered-"
	// IgnitionVersion is the Ignition spec version of rendered
	// configurations.
	IgnitionVersion = "3.5.0"
	// KubeletConfigPath is where the kubelet configuration is written on a
	// node.
	KubeletConfigPath = "/etc/kubernetes/kubelet.conf"
)
