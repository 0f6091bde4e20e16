package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	machinev1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// Annotations on Machines that a MachineHealthCheck reads. Cluster API's keys
// and machina's own mean the same; either one acts.
const (
	// SkipRemediationAnnotation (any value) takes a Machine out of every
	// check: it is neither counted nor remediated.
	SkipRemediationAnnotation = "machina.io/skip-remediation"
	// ClusterAPISkipRemediationAnnotation is Cluster API's key of the same.
	ClusterAPISkipRemediationAnnotation = "cluster.x-k8s.io/skip-remediation"
	// RemediateMachineAnnotation (any value) marks a Machine unhealthy
	// whatever its Node says; it is remediated as any unhealthy machine,
	// within the check's short-circuit.
	RemediateMachineAnnotation = "machina.io/remediate-machine"
	// ClusterAPIRemediateMachineAnnotation is Cluster API's key of the same.
	ClusterAPIRemediateMachineAnnotation = "cluster.x-k8s.io/remediate-machine"
)

// Condition types and reasons of a MachineHealthCheck.
const (
	// RemediationAllowedCondition is True while the check remediates the
	// unhealthy machines it finds, False when it remediates none.
	RemediationAllowedCondition = "RemediationAllowed"
	// ReasonWithinLimit: the unhealthy machines are within maxUnhealthy or
	// unhealthyRange.
	ReasonWithinLimit = "WithinLimit"
	// ReasonTooManyUnhealthy: more machines are unhealthy than maxUnhealthy
	// or unhealthyRange allow (the short-circuit).
	ReasonTooManyUnhealthy = "TooManyUnhealthy"
	// ReasonInvalidSpec: the spec cannot be acted on (a selector or range
	// the schema let through); the message names the field.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonFrozen: the API servers are or were just unreachable, so no
	// health decision is taken (the safety gate of the health timeout).
	ReasonFrozen = "Frozen"
	// ReasonRemediationTemplateUnavailable: spec.remediationTemplate cannot
	// be read (not found, forbidden, its kind not served); the message has
	// the API server's error. Nothing is remediated, no machine is deleted
	// instead.
	ReasonRemediationTemplateUnavailable = "RemediationTemplateUnavailable"
	// ReasonRemediationTemplateInvalid: the remediation template has no
	// spec.template object, or a field of it has the wrong type.
	ReasonRemediationTemplateInvalid = "RemediationTemplateInvalid"
	// ReasonRemediationRequestFailed: a remediation request could not be
	// listed, created or deleted; the message has the error.
	ReasonRemediationRequestFailed = "RemediationRequestFailed"
)

// Annotations on a remediation request, naming the template it was made
// from (Cluster API's cloned-from annotations).
const (
	// ClonedFromNameAnnotation is the template's name.
	ClonedFromNameAnnotation = "machina.io/cloned-from-name"
	// ClonedFromGroupKindAnnotation is the template's kind.group.
	ClonedFromGroupKindAnnotation = "machina.io/cloned-from-groupkind"
)

// TemplateSuffix ends the kind of a remediation template; the kind of its
// requests is the same without it (TestRemediationTemplate makes
// TestRemediation objects), as in Cluster API.
const TemplateSuffix = "Template"

// DefaultMaxUnhealthy is maxUnhealthy when neither it nor unhealthyRange is
// set: every unhealthy machine may be remediated.
var DefaultMaxUnhealthy = intstr.FromString("100%")

// MachineHealthCheck remediates the Machines it selects whose Node is
// unhealthy for too long, by deleting them so that their MachineSet
// replaces them, or, with a remediationTemplate, by asking an external
// remediation controller; it remediates none while more are unhealthy than
// it allows.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=mhc
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="MaxUnhealthy",type=string,JSONPath=`.spec.maxUnhealthy`
// +kubebuilder:printcolumn:name="Expected",type=integer,JSONPath=`.status.expectedMachines`
// +kubebuilder:printcolumn:name="Healthy",type=integer,JSONPath=`.status.currentHealthy`
// +kubebuilder:printcolumn:name="Allowed",type=string,JSONPath=`.status.conditions[?(@.type=="RemediationAllowed")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineHealthCheck struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec MachineHealthCheckSpec `json:"spec"`
	// +optional
	Status MachineHealthCheckStatus `json:"status,omitempty"`
}

// MachineHealthCheckSpec says which machines are checked, when one is
// unhealthy, and how many may be remediated.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.maxUnhealthy) && has(self.unhealthyRange))",message="maxUnhealthy and unhealthyRange are mutually exclusive"
type MachineHealthCheckSpec struct {
	// Selector selects the Machines of the check's namespace. It must not
	// be empty: a check of every machine is written out, not implied.
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="selector must not be empty"
	// +required
	Selector metav1.LabelSelector `json:"selector"`

	// UnhealthyNodeConditions make a machine unhealthy when its Node has a
	// condition of that type and status for longer than the timeout,
	// measured from the condition's lastTransitionTime.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	UnhealthyNodeConditions []UnhealthyNodeCondition `json:"unhealthyNodeConditions,omitempty"`

	// MaxUnhealthy: remediation happens only while at most this many
	// selected machines (a number, or a percentage of them rounded down)
	// are unhealthy or have no Node yet. Unset means 100% (unless
	// unhealthyRange is set).
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="maxUnhealthy must be a non-negative number or a percentage from 0% to 100%"
	// +optional
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`

	// UnhealthyRange "[min-max]": remediation happens only while the number
	// of unhealthy machines is within min and max, both included.
	// +kubebuilder:validation:Pattern=`^\[[0-9]{1,9}-[0-9]{1,9}\]$`
	// +kubebuilder:validation:MaxLength=21
	// +optional
	UnhealthyRange string `json:"unhealthyRange,omitempty"`

	// NodeStartupTimeout: a machine that has no Node this long after its
	// creation is unhealthy. 0 disables it; unset means 10m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 64 && self.matches('^[-+]?(0|((0*[0-9]{1,5}([.][0-9]*)?|[.][0-9]+)h|(0*[0-9]{1,7}([.][0-9]*)?|[.][0-9]+)m|(0*[0-9]{1,9}([.][0-9]*)?|[.][0-9]+)s|(0*[0-9]{1,12}([.][0-9]*)?|[.][0-9]+)ms|(0*[0-9]{1,15}([.][0-9]*)?|[.][0-9]+)(us|µs|μs)|(0*[0-9]{1,18}([.][0-9]*)?|[.][0-9]+)ns)+)$') && duration(self) >= duration('0s') && duration(self) <= duration('87600h')`,message="must be a Go duration from 0s to 87600h of at most 64 characters, such as 10m or 2h30m"
	// +kubebuilder:default="10m"
	// +optional
	NodeStartupTimeout *machinev1alpha1.Duration `json:"nodeStartupTimeout,omitempty"`

	// RemediationTemplate, when set, makes remediation external: instead of
	// deleting an unhealthy machine the check creates a remediation request
	// for it, an object of the template's kind without its "Template"
	// suffix, named after the machine, whose spec is the template's
	// spec.template.spec; it deletes the request once the machine is
	// healthy again. Another controller acts on the request (a reboot, a
	// reprovision). Cluster API's spec.remediationTemplate.
	// +optional
	RemediationTemplate *RemediationTemplateReference `json:"remediationTemplate,omitempty"`
}

// RemediationTemplateReference names a remediation template in the check's
// namespace.
type RemediationTemplateReference struct {
	// APIVersion of the template, group/version.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +kubebuilder:validation:XValidation:rule="self.contains('/')",message="apiVersion must be group/version: remediation templates are not core kinds"
	// +required
	APIVersion string `json:"apiVersion"`
	// Kind of the template; it ends in Template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.endsWith('Template') && size(self) > 8",message="kind must end in Template, such as Metal3RemediationTemplate"
	// +required
	Kind string `json:"kind"`
	// Name of the template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// Namespace of the template: empty or the check's own. A check reads no
	// template of another namespace.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// UnhealthyNodeCondition is a Node condition that makes a machine unhealthy
// once it has held for Timeout.
type UnhealthyNodeCondition struct {
	// Type of the Node condition, such as Ready.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +required
	Type string `json:"type"`
	// Status of the condition that is unhealthy.
	// +kubebuilder:validation:Enum=True;False;Unknown
	// +required
	Status metav1.ConditionStatus `json:"status"`
	// Timeout is how long the condition holds before the machine is
	// unhealthy.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule=`self.size() <= 64 && self.matches('^[-+]?(0|((0*[0-9]{1,5}([.][0-9]*)?|[.][0-9]+)h|(0*[0-9]{1,7}([.][0-9]*)?|[.][0-9]+)m|(0*[0-9]{1,9}([.][0-9]*)?|[.][0-9]+)s|(0*[0-9]{1,12}([.][0-9]*)?|[.][0-9]+)ms|(0*[0-9]{1,15}([.][0-9]*)?|[.][0-9]+)(us|µs|μs)|(0*[0-9]{1,18}([.][0-9]*)?|[.][0-9]+)ns)+)$') && duration(self) >= duration('0s') && duration(self) <= duration('87600h')`,message="must be a Go duration from 0s to 87600h of at most 64 characters, such as 10m or 2h30m"
	// +required
	Timeout machinev1alpha1.Duration `json:"timeout"`
}

// MachineHealthCheckStatus is what the check found at its last run.
type MachineHealthCheckStatus struct {
	// ExpectedMachines is the number of machines the check selects (those
	// with a skip-remediation annotation left out).
	// +optional
	ExpectedMachines int32 `json:"expectedMachines"`
	// CurrentHealthy is the number of those with a Node that is healthy or
	// whose unhealthy conditions have not yet held for their timeout.
	// +optional
	CurrentHealthy int32 `json:"currentHealthy"`
	// RemediationsAllowed is how many more machines may turn unhealthy
	// before the check stops remediating.
	// +optional
	RemediationsAllowed int32 `json:"remediationsAllowed"`
	// ObservedGeneration is the generation of the spec this status is of.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: RemediationAllowed (False also when the remediation
	// template cannot be used).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// +kubebuilder:object:root=true

// MachineHealthCheckList is a list of MachineHealthChecks.
type MachineHealthCheckList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineHealthCheck `json:"items"`
}
