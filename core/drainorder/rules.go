package drainorder

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
)

// Decision is what a drain does with one pod, and what decided it.
type Decision struct {
	Behavior machinaio.DrainBehavior
	// Order of the eviction group, for Drain; 0 otherwise.
	Order int32
	// Source names what decided, for messages: "MachineDrainRule NAME" or
	// "label KEY=VALUE"; empty for the default (Drain, order 0).
	Source string
}

// Rules are the MachineDrainRules that apply to the drain of one Machine,
// sorted by name, with their pod selectors parsed. The zero value (and nil)
// has no rule: every pod is drained at order 0 unless a label says
// otherwise.
type Rules struct {
	rules []rule
}

type rule struct {
	name  string
	drain machinaio.MachineDrainRuleDrain
	pods  []podSelector // none: every pod
}

type podSelector struct {
	pod, namespace labels.Selector
}

// ForMachine picks, from the MachineDrainRules of a Machine's namespace,
// those that select a Machine with machineLabels, in the order they are
// consulted: by name, as Cluster API does, so that of several rules that
// select a pod the first by name decides. A selector that cannot be parsed
// is an error that names the rule: the drain of the machine stops there
// rather than drain pods a broken rule meant to keep.
func ForMachine(all []machinaio.MachineDrainRule, machineLabels map[string]string) (*Rules, error) {
	items := append([]machinaio.MachineDrainRule(nil), all...)
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	out := &Rules{}
	for i := range items {
		mdr := &items[i]
		selects, err := selectsMachine(mdr, labels.Set(machineLabels))
		if err != nil {
			return nil, err
		}
		if !selects {
			continue
		}
		r := rule{name: mdr.Name, drain: mdr.Spec.Drain}
		switch r.drain.Behavior {
		case machinaio.DrainBehaviorDrain, machinaio.DrainBehaviorSkip, machinaio.DrainBehaviorWaitCompleted:
		default:
			return nil, fmt.Errorf("MachineDrainRule %s: unknown spec.drain.behavior %q", mdr.Name, r.drain.Behavior)
		}
		for j, ps := range mdr.Spec.Pods {
			pod, err := ps.Selector.AsSelector()
			if err != nil {
				return nil, fmt.Errorf("MachineDrainRule %s: spec.pods[%d].selector: %w", mdr.Name, j, err)
			}
			ns, err := ps.NamespaceSelector.AsSelector()
			if err != nil {
				return nil, fmt.Errorf("MachineDrainRule %s: spec.pods[%d].namespaceSelector: %w", mdr.Name, j, err)
			}
			r.pods = append(r.pods, podSelector{pod: pod, namespace: ns})
		}
		out.rules = append(out.rules, r)
	}
	return out, nil
}

// selectsMachine tells whether any of the rule's machine selectors (or,
// with none, the rule as a whole) selects the machine.
func selectsMachine(mdr *machinaio.MachineDrainRule, set labels.Set) (bool, error) {
	if len(mdr.Spec.Machines) == 0 {
		return true, nil
	}
	for i := range mdr.Spec.Machines {
		sel, err := mdr.Spec.Machines[i].Selector.AsSelector()
		if err != nil {
			return false, fmt.Errorf("MachineDrainRule %s: spec.machines[%d].selector: %w", mdr.Name, i, err)
		}
		if sel.Matches(set) {
			return true, nil
		}
	}
	return false, nil
}

// Names are the names of the rules, in the order they are consulted.
func (r *Rules) Names() []string {
	if r == nil {
		return nil
	}
	names := make([]string, 0, len(r.rules))
	for _, x := range r.rules {
		names = append(names, x.name)
	}
	return names
}

// NeedsNamespaces tells whether a rule selects pods by the labels of their
// namespace, so that the caller must read the namespaces for Decide.
func (r *Rules) NeedsNamespaces() bool {
	if r == nil {
		return false
	}
	for _, x := range r.rules {
		for _, ps := range x.pods {
			if !ps.namespace.Empty() {
				return true
			}
		}
	}
	return false
}

// Decide says what the drain does with pod, whose namespace has the
// labels nsLabels (nil when unknown: a namespaceSelector then does not
// match). A drain label on the pod (machina.io/drain, then Cluster API's
// cluster.x-k8s.io/drain: skip or wait-completed) wins over the rules, as in
// Cluster API; then the first rule by name that selects the pod; else
// Drain at order 0.
func (r *Rules) Decide(pod *corev1.Pod, nsLabels map[string]string) Decision {
	if d, ok := labelDecision(pod); ok {
		return d
	}
	if r == nil {
		return Decision{Behavior: machinaio.DrainBehaviorDrain}
	}
	for _, x := range r.rules {
		if !x.selectsPod(pod, nsLabels) {
			continue
		}
		d := Decision{Behavior: x.drain.Behavior, Source: "MachineDrainRule " + x.name}
		if d.Behavior == machinaio.DrainBehaviorDrain && x.drain.Order != nil {
			d.Order = *x.drain.Order
		}
		return d
	}
	return Decision{Behavior: machinaio.DrainBehaviorDrain}
}

func (x *rule) selectsPod(pod *corev1.Pod, nsLabels map[string]string) bool {
	if len(x.pods) == 0 {
		return true
	}
	for _, ps := range x.pods {
		if !ps.pod.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if ps.namespace.Empty() || (nsLabels != nil && ps.namespace.Matches(labels.Set(nsLabels))) {
			return true
		}
	}
	return false
}

// drainLabels are the pod labels that set a pod's behaviour, machina's
// first.
var drainLabels = []string{machinaio.PodDrainLabel, machinaio.ClusterAPIPodDrainLabel}

// labelDecision reads the drain labels of the pod. Values are compared
// without case, and WaitCompleted is taken for wait-completed, as Cluster
// API does; other values are ignored.
func labelDecision(pod *corev1.Pod) (Decision, bool) {
	for _, key := range drainLabels {
		v, ok := pod.Labels[key]
		if !ok {
			continue
		}
		source := "label " + key + "=" + v
		switch strings.ToLower(strings.ReplaceAll(v, "-", "")) {
		case "skip":
			return Decision{Behavior: machinaio.DrainBehaviorSkip, Source: source}, true
		case "waitcompleted":
			return Decision{Behavior: machinaio.DrainBehaviorWaitCompleted, Source: source}, true
		}
	}
	return Decision{}, false
}

// Completed tells whether the pod has run to its end: a WaitCompleted pod
// holds the drain until then (or until it is gone).
func Completed(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Decided is a pod with its Decision.
type Decided struct {
	Pod corev1.Pod
	Decision
}

// Stage is one step of a drain: its pods to evict are evicted together
// (those with claims one at a time, Serial), and the next stage starts only
// once every pod of this one, evicted or waited for, is gone (or, waited
// for, has completed).
type Stage struct {
	// Order is the drain order of the stage's pods.
	Order int32
	// Critical: the stage holds the critical pods of its order, which
	// leave after the others of the same order.
	Critical bool
	// Evict are the pods the stage evicts.
	Evict []corev1.Pod
	// Wait are the pods the stage does not evict but waits for
	// (WaitCompleted) until they have completed or are gone. They belong
	// to the first stage of order 0, as in Cluster API (a WaitCompleted
	// pod has order 0).
	Wait []Decided
}

// Stages sorts the pods a drain removes (kubectl's filters already applied,
// see Filters) into the stages it runs one after the other: by increasing
// drain order, and within an order the pods that are not critical, then the
// critical ones (Critical). Pods that decide says to skip are returned apart;
// pods to wait for that have completed already are in neither.
func Stages(pods []corev1.Pod, decide func(*corev1.Pod) Decision) (stages []Stage, skipped []Decided) {
	byOrder := map[int32][]corev1.Pod{}
	var wait []Decided
	for _, p := range pods {
		d := decide(&p)
		switch d.Behavior {
		case machinaio.DrainBehaviorSkip:
			skipped = append(skipped, Decided{Pod: p, Decision: d})
		case machinaio.DrainBehaviorWaitCompleted:
			if !Completed(&p) {
				wait = append(wait, Decided{Pod: p, Decision: d})
			}
		default:
			byOrder[d.Order] = append(byOrder[d.Order], p)
		}
	}
	if len(wait) > 0 {
		if _, ok := byOrder[0]; !ok {
			byOrder[0] = nil
		}
	}
	orders := make([]int32, 0, len(byOrder))
	for o := range byOrder {
		orders = append(orders, o)
	}
	sort.Slice(orders, func(i, j int) bool { return orders[i] < orders[j] })
	for _, o := range orders {
		var others, critical []corev1.Pod
		for _, p := range byOrder[o] {
			if Critical(&p) {
				critical = append(critical, p)
			} else {
				others = append(others, p)
			}
		}
		first := Stage{Order: o, Evict: others}
		if o == 0 {
			first.Wait = wait
		}
		if len(first.Evict) > 0 || len(first.Wait) > 0 {
			stages = append(stages, first)
		}
		if len(critical) > 0 {
			stages = append(stages, Stage{Order: o, Critical: true, Evict: critical})
		}
	}
	return stages, skipped
}
