package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/drainorder"
)

// drainRuleError is a MachineDrainRule that the drain cannot use (a
// selector that does not parse): the manager's drain of the machine stops
// on it too.
type drainRuleError struct{ err error }

func (e *drainRuleError) Error() string { return e.err.Error() }
func (e *drainRuleError) Unwrap() error { return e.err }

// machineOfNode is the Machine of the namespace whose node label names the
// Node; nil when there is none.
func (c *clients) machineOfNode(ctx context.Context, nodeName string) (*v1alpha1.Machine, error) {
	var l v1alpha1.MachineList
	if err := c.control.List(ctx, &l, client.InNamespace(c.namespace), client.MatchingLabels{v1alpha1.NodeLabelKey: nodeName}); err != nil {
		return nil, fmt.Errorf("listing the machine of node %s: %w", nodeName, err)
	}
	if len(l.Items) == 0 {
		return nil, nil
	}
	return &l.Items[0], nil
}

// drainDecider decides for each pod as the manager's drain of machine does
// (drainorder.ForMachine and Rules.Decide): with the MachineDrainRules of
// the machine's namespace that select it, and the labels of the target
// cluster's namespaces when a rule needs them. Without a machine, or where
// the kind is not served, only the pods' drain labels decide.
func (c *clients) drainDecider(ctx context.Context, machine *v1alpha1.Machine) (func(*corev1.Pod) drainorder.Decision, error) {
	var rules *drainorder.Rules
	if machine != nil {
		var l machinaio.MachineDrainRuleList
		err := c.control.List(ctx, &l, client.InNamespace(machine.Namespace))
		switch {
		case meta.IsNoMatchError(err):
		case err != nil:
			return nil, fmt.Errorf("listing MachineDrainRules: %w", err)
		default:
			if rules, err = drainorder.ForMachine(l.Items, machine.Labels); err != nil {
				return nil, &drainRuleError{err: err}
			}
		}
	}
	var nsLabels map[string]map[string]string
	if rules.NeedsNamespaces() {
		var l corev1.NamespaceList
		if err := c.target.List(ctx, &l); err != nil {
			return nil, fmt.Errorf("listing namespaces for the namespaceSelector of MachineDrainRules: %w", err)
		}
		nsLabels = map[string]map[string]string{}
		for _, ns := range l.Items {
			nsLabels[ns.Name] = ns.Labels
			if ns.Labels == nil {
				nsLabels[ns.Name] = map[string]string{}
			}
		}
	}
	return func(p *corev1.Pod) drainorder.Decision { return rules.Decide(p, nsLabels[p.Namespace]) }, nil
}

// drainPlan is what a drain of a Node would do now, computed with the
// core's filters and order (core/drainorder) from what the target cluster
// holds. Nothing is changed.
type drainPlan struct {
	node *corev1.Node
	// evict are the pods the drain removes, in order: step 1 is the first
	// pass, which evicts every pod without a PersistentVolumeClaim at once;
	// each later step is one pod with claims.
	evict []plannedPod
	// skipped are the pods of the Node the drain leaves alone.
	skipped []skippedPod
}

type plannedPod struct {
	pod  corev1.Pod
	step int
	// order is the pod's drain order (a MachineDrainRule's spec.drain.order).
	order int32
	// waitFor, when set, names what makes the drain wait for the pod to
	// complete instead of evicting it (a WaitCompleted rule or label).
	waitFor string
	// terminating pods are not evicted again; the drain waits for them.
	terminating bool
	// blockedBy names the PodDisruptionBudgets that allow no disruption of
	// the pod now: its eviction would be refused (429) until they do.
	blockedBy []string
	// limitedBy names the budgets that allow fewer disruptions than the
	// Node has pods under them: some of those evictions wait for the others.
	limitedBy []string
	// volumes are the pod's PersistentVolumes (or claims not bound yet).
	volumes []string
	// attached are the VolumeAttachments of the pod's volumes to the Node;
	// the drain waits for them to go before the next step.
	attached []string
}

type skippedPod struct {
	pod    corev1.Pod
	reason string
}

// planDrain computes the drain plan for the Node, with the
// MachineDrainRules that select machine (nil: the Node's Machine, looked up
// by its node label; none found: no rules); node is nil in the plan when
// it does not exist.
func planDrain(ctx context.Context, c *clients, nodeName string, machine *v1alpha1.Machine) (*drainPlan, error) {
	node, err := c.node(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	p := &drainPlan{node: node}
	if node == nil {
		return p, nil
	}
	list, errs := drainorder.Filters(ctx, c.targetSet).GetPodsForDeletion(nodeName)
	if len(errs) > 0 {
		return nil, fmt.Errorf("listing the pods of node %s: %w", nodeName, errors.Join(errs...))
	}
	if machine == nil {
		if machine, err = c.machineOfNode(ctx, nodeName); err != nil {
			return nil, err
		}
	}
	decide, err := c.drainDecider(ctx, machine)
	if err != nil {
		return nil, err
	}
	stages, ruleSkipped := drainorder.Stages(list.Pods(), decide)
	removed := map[string]bool{}
	for _, st := range stages {
		for _, pod := range st.Evict {
			removed[podKey(&pod)] = true
		}
		for _, w := range st.Wait {
			removed[podKey(&w.Pod)] = true
		}
	}
	skipReasons := map[string]string{}
	for _, d := range ruleSkipped {
		skipReasons[podKey(&d.Pod)] = d.Source
	}

	pdbs, err := c.disruptionBudgets(ctx)
	if err != nil {
		return nil, err
	}
	attachments, err := c.volumeAttachments(ctx, nodeName)
	if err != nil {
		return nil, err
	}
	// The drain's order (drainorder.Stages): by drain order, and within an
	// order the pods that are not critical (with the pods waited for),
	// then the critical ones; in each stage the pods without claims in one
	// step, then those with claims one step each.
	step := 0
	for _, st := range stages {
		var first, serial []corev1.Pod
		for _, pod := range st.Evict {
			if drainorder.Serial(&pod) {
				serial = append(serial, pod)
			} else {
				first = append(first, pod)
			}
		}
		sort.SliceStable(first, func(i, j int) bool { return podKey(&first[i]) < podKey(&first[j]) })
		drainorder.SortSerial(serial)
		if len(first) > 0 || len(st.Wait) > 0 {
			step++
		}
		for _, pod := range first {
			p.evict = append(p.evict, plannedPod{pod: pod, step: step, order: st.Order})
		}
		for _, w := range st.Wait {
			p.evict = append(p.evict, plannedPod{pod: w.Pod, step: step, order: st.Order, waitFor: w.Source})
		}
		for _, pod := range serial {
			step++
			pp := plannedPod{pod: pod, step: step, order: st.Order}
			if pp.volumes, err = c.podVolumes(ctx, &pod); err != nil {
				return nil, err
			}
			for _, va := range attachments {
				if pv := va.Spec.Source.PersistentVolumeName; pv != nil && slices.Contains(pp.volumes, *pv) {
					pp.attached = append(pp.attached, va.Name)
				}
			}
			p.evict = append(p.evict, pp)
		}
	}
	for i := range p.evict {
		pp := &p.evict[i]
		pp.terminating = pp.pod.DeletionTimestamp != nil
		pp.blockedBy, pp.limitedBy = budgetsOf(&pp.pod, pdbs, p.evict)
	}

	var all corev1.PodList
	if err := c.target.List(ctx, &all, client.MatchingFields{"spec.nodeName": nodeName}); err != nil {
		return nil, fmt.Errorf("listing the pods of node %s: %w", nodeName, err)
	}
	for _, pod := range all.Items {
		if !removed[podKey(&pod)] {
			reason := skipReason(&pod)
			if src, ok := skipReasons[podKey(&pod)]; ok {
				reason = src + ": Skip"
			} else if d := decide(&pod); d.Behavior == machinaio.DrainBehaviorWaitCompleted && drainorder.Completed(&pod) {
				reason = "completed (" + d.Source + ": WaitCompleted)"
			}
			p.skipped = append(p.skipped, skippedPod{pod: pod, reason: reason})
		}
	}
	sort.Slice(p.skipped, func(i, j int) bool { return podKey(&p.skipped[i].pod) < podKey(&p.skipped[j].pod) })
	return p, nil
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// skipReason says why kubectl's filters, as the core configures them, leave
// the pod on the Node.
func skipReason(p *corev1.Pod) string {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return "mirror pod (static, owned by the kubelet)"
	}
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
		return "DaemonSet " + ref.Name + " (its controller would put it back)"
	}
	for _, key := range []string{machinaio.PodDrainLabel, machinaio.ClusterAPIPodDrainLabel} {
		if v, ok := p.Labels[key]; ok && strings.EqualFold(v, machinaio.PodDrainSkip) {
			return "labelled " + key + "=" + v
		}
	}
	return "kept by the drain's pod filters"
}

// disruptionBudgets are the PodDisruptionBudgets of the target cluster.
func (c *clients) disruptionBudgets(ctx context.Context) ([]policyv1.PodDisruptionBudget, error) {
	var l policyv1.PodDisruptionBudgetList
	if err := c.target.List(ctx, &l); err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	return l.Items, nil
}

// budgetsOf finds the budgets that cover the pod: blocked by those that
// allow no disruption now, limited by those that allow fewer than the plan
// evicts under them.
func budgetsOf(pod *corev1.Pod, pdbs []policyv1.PodDisruptionBudget, plan []plannedPod) (blocked, limited []string) {
	for i := range pdbs {
		pdb := &pdbs[i]
		if !covers(pdb, pod) {
			continue
		}
		name := "PodDisruptionBudget " + pdb.Namespace + "/" + pdb.Name
		allowed := pdb.Status.DisruptionsAllowed
		if allowed < 1 {
			blocked = append(blocked, fmt.Sprintf("%s (0 disruptions allowed)", name))
			continue
		}
		covered := 0
		for j := range plan {
			if covers(pdb, &plan[j].pod) {
				covered++
			}
		}
		if int(allowed) < covered {
			limited = append(limited, fmt.Sprintf("%s (%d of %d at a time)", name, allowed, covered))
		}
	}
	return blocked, limited
}

// covers tells whether the budget selects the pod, as the Eviction API
// decides it: same namespace, and the selector matches (policy/v1: an empty
// selector selects every pod, a missing one none).
func covers(pdb *policyv1.PodDisruptionBudget, pod *corev1.Pod) bool {
	if pdb.Namespace != pod.Namespace || pdb.Spec.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(pod.Labels))
}

// volumeAttachments are the VolumeAttachments to the Node.
func (c *clients) volumeAttachments(ctx context.Context, nodeName string) ([]storagev1.VolumeAttachment, error) {
	var l storagev1.VolumeAttachmentList
	if err := c.target.List(ctx, &l); err != nil {
		return nil, fmt.Errorf("listing VolumeAttachments: %w", err)
	}
	var out []storagev1.VolumeAttachment
	for _, va := range l.Items {
		if va.Spec.NodeName == nodeName {
			out = append(out, va)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// podVolumes are the PersistentVolumes of the pod's claims; a claim that is
// not bound is named as "claim/NAME (unbound)".
func (c *clients) podVolumes(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	var out []string
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc := &corev1.PersistentVolumeClaim{}
		err := c.target.Get(ctx, client.ObjectKey{Namespace: pod.Namespace, Name: v.PersistentVolumeClaim.ClaimName}, pvc)
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, "claim/"+v.PersistentVolumeClaim.ClaimName+" (missing)")
		case err != nil:
			return nil, fmt.Errorf("reading PersistentVolumeClaim %s/%s: %w", pod.Namespace, v.PersistentVolumeClaim.ClaimName, err)
		case pvc.Spec.VolumeName == "":
			out = append(out, "claim/"+pvc.Name+" (unbound)")
		default:
			out = append(out, pvc.Spec.VolumeName)
		}
	}
	return out, nil
}
