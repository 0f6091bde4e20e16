package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Pod labels that set a pod's drain behaviour from the workload side. They
// win over every MachineDrainRule, as Cluster API's label does. The values
// are skip and wait-completed; any other value is ignored (the rules, or
// the default, decide).
const (
	// PodDrainLabel is machina's own key.
	PodDrainLabel = "machina.io/drain"
	// ClusterAPIPodDrainLabel is Cluster API's key of the same.
	ClusterAPIPodDrainLabel = "cluster.x-k8s.io/drain"
	// PodDrainSkip leaves the pod on the Node.
	PodDrainSkip = "skip"
	// PodDrainWaitCompleted does not evict the pod; the drain waits until
	// it has completed.
	PodDrainWaitCompleted = "wait-completed"
)

// DrainBehavior is what a drain does with a pod.
// +kubebuilder:validation:Enum=Drain;Skip;WaitCompleted
type DrainBehavior string

const (
	// DrainBehaviorDrain evicts the pod, in the group of its order.
	DrainBehaviorDrain DrainBehavior = "Drain"
	// DrainBehaviorSkip leaves the pod on the Node: it goes with the VM.
	DrainBehaviorSkip DrainBehavior = "Skip"
	// DrainBehaviorWaitCompleted does not evict the pod, and the drain does
	// not end until the pod has completed (Succeeded or Failed) or is gone.
	DrainBehaviorWaitCompleted DrainBehavior = "WaitCompleted"
)

// MachineDrainRule tells the drain of the Machines it selects what to do
// with the pods it selects: evict them in an order, leave them, or wait for
// them to complete (Cluster API's MachineDrainRule). Where several rules of
// the Machine's namespace select a pod, the first by name wins.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=mdr
// +kubebuilder:printcolumn:name="Behavior",type=string,JSONPath=`.spec.drain.behavior`
// +kubebuilder:printcolumn:name="Order",type=integer,JSONPath=`.spec.drain.order`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineDrainRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec MachineDrainRuleSpec `json:"spec"`
}

// MachineDrainRuleSpec says which machines' drains and which pods the rule
// is about, and what the drain does with those pods.
type MachineDrainRuleSpec struct {
	// Drain is what the drain does with the selected pods.
	// +required
	Drain MachineDrainRuleDrain `json:"drain"`

	// Machines selects, by their labels, the Machines of the rule's
	// namespace whose drain the rule applies to; any selector that matches
	// is enough. Unset: every Machine of the namespace.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Machines []MachineDrainRuleMachineSelector `json:"machines,omitempty"`

	// Pods selects, on the Node being drained, the pods the rule decides
	// for; any selector that matches is enough. Unset: every pod the drain
	// would remove.
	// +listType=atomic
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Pods []MachineDrainRulePodSelector `json:"pods,omitempty"`
}

// MachineDrainRuleDrain is the behaviour, and for Drain the order.
//
// +kubebuilder:validation:XValidation:rule="!has(self.order) || self.behavior == 'Drain'",message="order can only be set when behavior is Drain"
type MachineDrainRuleDrain struct {
	// Behavior: Drain (evict), Skip (leave the pod) or WaitCompleted (do
	// not evict; the drain waits until the pod has completed or is gone).
	// +required
	Behavior DrainBehavior `json:"behavior"`

	// Order of the eviction, for Drain: the pods are evicted in groups of
	// increasing order, each group after every pod of the previous one is
	// gone. Pods no rule orders have order 0, and so do the pods a
	// WaitCompleted rule holds. Unset: 0.
	// +optional
	Order *int32 `json:"order,omitempty"`
}

// MachineDrainRuleMachineSelector selects Machines by their labels.
type MachineDrainRuleMachineSelector struct {
	// Selector over the Machine's labels; empty selects every Machine.
	// +required
	Selector LabelSelector `json:"selector"`
}

// MachineDrainRulePodSelector selects pods by their labels and those of
// their namespace; both must match.
//
// +kubebuilder:validation:MinProperties=1
type MachineDrainRulePodSelector struct {
	// Selector over the pod's labels; unset or empty selects every pod.
	// +optional
	Selector *LabelSelector `json:"selector,omitempty"`

	// NamespaceSelector over the labels of the pod's namespace (in the
	// cluster of the Nodes); unset or empty selects every namespace.
	// +optional
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
}

// LabelSelector is a Kubernetes label selector (metav1.LabelSelector, the
// same fields) with bounds on its lists, so that the API server can check
// each expression's operator and values when the rule is written rather
// than the drain finding out.
type LabelSelector struct {
	// MatchLabels: every key must have that value.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// MatchExpressions: every expression must hold.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +optional
	MatchExpressions []LabelSelectorRequirement `json:"matchExpressions,omitempty"`
}

// LabelSelectorRequirement is one expression of a LabelSelector.
//
// +kubebuilder:validation:XValidation:rule="self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) : (!has(self.values) || size(self.values) == 0)",message="operator In or NotIn needs values, Exists or DoesNotExist takes none"
type LabelSelectorRequirement struct {
	// Key is the label's key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	// +required
	Key string `json:"key"`
	// Operator: In, NotIn, Exists or DoesNotExist.
	// +kubebuilder:validation:Enum=In;NotIn;Exists;DoesNotExist
	// +required
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// Values for In and NotIn.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Values []string `json:"values,omitempty"`
}

// AsSelector turns the selector into a labels.Selector; an empty selector
// (or a nil one) selects everything. The error names what is wrong (a key
// or value that is not a valid label), which the schema does not check.
func (s *LabelSelector) AsSelector() (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	ls := &metav1.LabelSelector{MatchLabels: s.MatchLabels}
	for _, e := range s.MatchExpressions {
		ls.MatchExpressions = append(ls.MatchExpressions, metav1.LabelSelectorRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values})
	}
	return metav1.LabelSelectorAsSelector(ls)
}

// +kubebuilder:object:root=true

// MachineDrainRuleList is a list of MachineDrainRules.
type MachineDrainRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineDrainRule `json:"items"`
}
