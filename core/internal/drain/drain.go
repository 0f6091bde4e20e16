package drain

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	kubedrain "k8s.io/kubectl/pkg/drain"

	"github.com/machina-io/machina/core/drainorder"
)

// Drainer runs drain passes against the cluster that holds the Nodes.
// It is safe for concurrent use by many reconciles.
type Drainer struct {
	client kubernetes.Interface
}

// New returns a Drainer that talks to the target cluster through client.
func New(client kubernetes.Interface) *Drainer {
	return &Drainer{client: client}
}

// Options tune one drain pass.
type Options struct {
	// Force deletes the pods with a grace period of zero instead of evicting
	// them, bypassing PodDisruptionBudgets. Pods already terminating are
	// deleted again with a zero grace period so that a Node with no kubelet
	// left does not keep them forever.
	Force bool
	// NoCordon leaves the Node schedulable: the caller keeps new pods off
	// it by other means (a preserved machine's NoSchedule taint), so that
	// a cordon a user set, or did not set, is left as it is.
	NoCordon bool

	// Wait is the wait for a pod's volumes that the previous pass returned
	// (Result.Waiting), nil when there was none.
	Wait *VolumeWait
	// DetachTimeout bounds the wait for the volumes of one pod
	// (--machine-pv-detach-timeout); DefaultDetachTimeout when zero.
	DetachTimeout time.Duration
	// ReattachTimeout bounds the wait, after a pod's volumes detached, for
	// them to be attached to another node (--machine-pv-reattach-timeout);
	// zero: no such wait.
	ReattachTimeout time.Duration
	// VolumeIDs maps PersistentVolumes to provider volume IDs, to find
	// volumes without a VolumeAttachment in node.status.volumesAttached;
	// nil when the driver does not offer GetVolumeIDs (then only
	// VolumeAttachments tell a detach).
	VolumeIDs VolumeIDsFunc
	// Now is the time of the pass; time.Now() when zero.
	Now time.Time
	// Rules are the MachineDrainRules of the drained machine
	// (drainorder.ForMachine); nil: none, only the pods' drain labels act.
	Rules *drainorder.Rules
}

func (o Options) now() time.Time {
	if o.Now.IsZero() {
		return time.Now()
	}
	return o.Now
}

func (o Options) detachTimeout() time.Duration {
	if o.DetachTimeout <= 0 {
		return DefaultDetachTimeout
	}
	return o.DetachTimeout
}

// Result tells what one pass saw and did.
type Result struct {
	// NodeFound is false when the Node does not exist; there is nothing to
	// drain then.
	NodeFound bool
	// Remaining is the number of pods the drain still waits for: pods it
	// evicts (or deletes) and pods already terminating. Zero means drained.
	Remaining int
	// Evicted is the number of evictions (deletions when forced) the API
	// server accepted in this pass.
	Evicted int
	// Terminating is the number of remaining pods that were already being
	// deleted when the pass listed them.
	Terminating int
	// Held is the number of remaining pods not evicted (or waited for)
	// yet because they leave after the others: critical pods, and pods of
	// a higher drain order (drainorder.Stages).
	Held int
	// HeldByOrder is how many of Held wait for pods of a lower drain order
	// (a MachineDrainRule's spec.drain.order) to go.
	HeldByOrder int
	// WaitCompleted maps the pods ("namespace/name") that the drain does
	// not evict but waits for until they have completed or are gone to
	// what said so ("MachineDrainRule NAME" or "label KEY=VALUE"). They
	// count in Remaining.
	WaitCompleted map[string]string
	// Skipped maps the pods that a MachineDrainRule or a drain label leaves
	// on the Node to what said so; they do not count in Remaining.
	Skipped map[string]string
	// Blocked lists the pods ("namespace/name") whose eviction a
	// PodDisruptionBudget refused in this pass; they are retried next pass.
	Blocked []string
	// Misconfigured maps those of Blocked whose budget can never allow the
	// eviction (misconfiguredPDB) to that budget's name: waiting does not
	// help, an operator must fix the budget or the drain must be forced.
	Misconfigured map[string]string
	// Failed maps pods ("namespace/name") to the error their eviction
	// returned, for errors other than a PodDisruptionBudget refusal.
	Failed map[string]string

	// Waiting is the wait for the volumes of an evicted pod that the next
	// pass must continue; the caller stores it and passes it back in
	// Options.Wait. Nil when the drain waits for no detach.
	Waiting *VolumeWait
	// AttachedVolumes is how many volumes of the Waiting pod are still
	// attached to the Node (0 while the pod itself is still there).
	AttachedVolumes int
	// DetachTimedOut lists the pods whose volumes did not detach within
	// the detach timeout; the drain went on without waiting longer.
	DetachTimedOut []string
	// Reattaching is how many detached volumes of the Waiting pod are not
	// attached to another node yet.
	Reattaching int
	// ReattachTimedOut lists the pods whose volumes were not attached
	// elsewhere within the reattach timeout; the drain went on.
	ReattachTimedOut []string
}

// Drained tells whether the Node has no pod left that the drain waits for.
func (r Result) Drained() bool { return r.Remaining == 0 && r.Waiting == nil }

// Summary is a one-line, human-readable account of the pass, for events,
// conditions and lastOperation.
func (r Result) Summary() string {
	if !r.NodeFound {
		return "node not found, nothing to drain"
	}
	if r.Drained() {
		return "node drained"
	}
	parts := []string{fmt.Sprintf("%d pods remaining", r.Remaining)}
	if w := r.Waiting; w != nil {
		if r.Reattaching > 0 {
			parts = append(parts, fmt.Sprintf("waiting for %d volumes of pod %s to be attached to another node (detached at %s)", r.Reattaching, w.Pod, w.DetachedAt.UTC().Format(time.RFC3339)))
		} else if r.AttachedVolumes > 0 {
			parts = append(parts, fmt.Sprintf("waiting for %d volumes of pod %s to detach (evicted at %s)", r.AttachedVolumes, w.Pod, w.Since.UTC().Format(time.RFC3339)))
		} else {
			parts = append(parts, fmt.Sprintf("waiting for pod %s to go and its %d volumes to detach (evicted at %s)", w.Pod, len(w.Volumes), w.Since.UTC().Format(time.RFC3339)))
		}
	}
	if r.Terminating > 0 {
		parts = append(parts, fmt.Sprintf("%d terminating", r.Terminating))
	}
	if r.Evicted > 0 {
		parts = append(parts, fmt.Sprintf("%d evicted in this pass", r.Evicted))
	}
	if len(r.WaitCompleted) > 0 {
		parts = append(parts, "waiting for "+waitCompletedList(r.WaitCompleted, 3)+" to complete, not evicted")
	}
	if critical := r.Held - r.HeldByOrder; critical > 0 {
		parts = append(parts, fmt.Sprintf("%d critical pods wait for the others to go", critical))
	}
	if r.HeldByOrder > 0 {
		parts = append(parts, fmt.Sprintf("%d pods of a higher drain order wait for the lower orders to go", r.HeldByOrder))
	}
	if len(r.Blocked) > 0 {
		parts = append(parts, fmt.Sprintf("%d blocked by a PodDisruptionBudget (%s)", len(r.Blocked), abbreviate(r.Blocked, 5)))
	}
	if len(r.Misconfigured) > 0 {
		keys := make([]string, 0, len(r.Misconfigured))
		for k := range r.Misconfigured {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts = append(parts, fmt.Sprintf("PodDisruptionBudget %s of pod %s can never allow an eviction (all its pods are healthy and it allows 0 disruptions)",
			r.Misconfigured[keys[0]], keys[0]))
	}
	if len(r.Failed) > 0 {
		keys := make([]string, 0, len(r.Failed))
		for k := range r.Failed {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts = append(parts, fmt.Sprintf("%d evictions failed (%s: %s)", len(r.Failed), keys[0], r.Failed[keys[0]]))
	}
	if len(r.ReattachTimedOut) > 0 {
		parts = append(parts, fmt.Sprintf("gave up waiting for the volumes of %s to be attached elsewhere", abbreviate(r.ReattachTimedOut, 5)))
	}
	if len(r.DetachTimedOut) > 0 {
		parts = append(parts, fmt.Sprintf("gave up waiting for the volumes of %s to detach", abbreviate(r.DetachTimedOut, 5)))
	}
	return strings.Join(parts, ", ")
}

// Pass runs one drain pass over the Node named nodeName: it cordons the Node
// (unless opts.NoCordon),
// then evicts every pod without a PersistentVolumeClaim that is not
// terminating yet, and evicts the pods with claims one at a time, by
// priority, each after the volumes of the previous one have detached (see
// drainVolumePods). It returns without waiting for anything. Call it again
// later, with opts.Wait set to the last Result.Waiting, until
// Result.Drained. With opts.Force every pod is deleted at once.
//
// An error means the pass could not see the Node or its pods (or could not
// cordon it); per-pod eviction failures are reported in Result instead.
func (d *Drainer) Pass(ctx context.Context, nodeName string, opts Options) (Result, error) {
	res := Result{}
	node, err := d.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("reading node %s: %w", nodeName, err)
	}
	res.NodeFound = true

	if !opts.NoCordon {
		if err := d.cordon(ctx, node); err != nil {
			return res, err
		}
	}

	helper := d.helper(ctx, opts)
	list, errs := helper.GetPodsForDeletion(nodeName)
	if len(errs) > 0 {
		return res, fmt.Errorf("listing pods of node %s: %w", nodeName, errors.Join(errs...))
	}

	decide, err := d.decider(ctx, opts.Rules)
	if err != nil {
		return res, err
	}
	stages, skipped := drainorder.Stages(list.Pods(), decide)
	for _, p := range skipped {
		if res.Skipped == nil {
			res.Skipped = map[string]string{}
		}
		res.Skipped[p.Pod.Namespace+"/"+p.Pod.Name] = p.Source
	}
	if opts.Force {
		// A forced drain deletes everything at once, the pods it would
		// wait for included: there is no one left to serve the order or
		// the wait for. Skipped pods stay.
		var all []corev1.Pod
		for _, st := range stages {
			all = append(all, st.Evict...)
			for _, w := range st.Wait {
				all = append(all, w.Pod)
			}
		}
		err := d.removeGroup(ctx, helper, node, all, opts, &res)
		return res, err
	}
	if len(stages) == 0 {
		// No pod left, but the wait for the last one's volumes may be.
		stages = []drainorder.Stage{{}}
	}
	for i, st := range stages {
		if err := d.removeGroup(ctx, helper, node, st.Evict, opts, &res); err != nil {
			return res, err
		}
		for _, w := range st.Wait {
			if res.WaitCompleted == nil {
				res.WaitCompleted = map[string]string{}
			}
			res.WaitCompleted[w.Pod.Namespace+"/"+w.Pod.Name] = w.Source
			res.Remaining++
		}
		// The stored volume wait is the first stage's to continue.
		opts.Wait = nil
		if res.Remaining > 0 || res.Waiting != nil {
			// The later stages (the critical pods, the higher orders)
			// wait until this one is gone.
			for _, later := range stages[i+1:] {
				n := len(later.Evict) + len(later.Wait)
				res.Remaining += n
				res.Held += n
				if later.Order != st.Order {
					res.HeldByOrder += n
				}
			}
			break
		}
	}
	return res, nil
}

// decider returns how the pass decides for each pod (drainorder.Rules'
// Decide), with the labels of the pods' namespaces read once when a rule
// selects by them.
func (d *Drainer) decider(ctx context.Context, rules *drainorder.Rules) (func(*corev1.Pod) drainorder.Decision, error) {
	var nsLabels map[string]map[string]string
	if rules.NeedsNamespaces() {
		list, err := d.client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing namespaces for the namespaceSelector of MachineDrainRules %s: %w", strings.Join(rules.Names(), ", "), err)
		}
		nsLabels = make(map[string]map[string]string, len(list.Items))
		for _, ns := range list.Items {
			nsLabels[ns.Name] = ns.Labels
			if nsLabels[ns.Name] == nil {
				nsLabels[ns.Name] = map[string]string{}
			}
		}
	}
	return func(p *corev1.Pod) drainorder.Decision { return rules.Decide(p, nsLabels[p.Namespace]) }, nil
}

// waitCompletedList names up to max of the pods the drain waits for, each
// with what said to wait, in a stable order.
func waitCompletedList(pods map[string]string, max int) string {
	keys := make([]string, 0, len(pods))
	for k := range pods {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	items := make([]string, 0, len(keys))
	for _, k := range keys {
		items = append(items, fmt.Sprintf("pod %s (%s)", k, pods[k]))
	}
	return abbreviate(items, max)
}

// removeGroup evicts (deletes, when forced) the pods of one group: those
// without PersistentVolumeClaims at once, those with claims one at a time
// (drainVolumePods). It adds what it did and what is left to res.
func (d *Drainer) removeGroup(ctx context.Context, helper *kubedrain.Helper, node *corev1.Node, pods []corev1.Pod, opts Options, res *Result) error {
	var withVolumes []corev1.Pod
	for _, pod := range pods {
		if !opts.Force && hasPersistentVolume(&pod) {
			withVolumes = append(withVolumes, pod)
			continue
		}
		key := pod.Namespace + "/" + pod.Name
		terminating := pod.DeletionTimestamp != nil
		if terminating && !opts.Force {
			// The eviction already happened; wait for the pod to go.
			res.Remaining++
			res.Terminating++
			continue
		}

		err := d.remove(ctx, helper, pod, opts.Force)
		switch {
		case err == nil:
			res.Evicted++
			res.Remaining++
			if terminating {
				res.Terminating++
			}
		case apierrors.IsNotFound(err):
			// Gone between the list and the eviction: nothing to wait for.
		case apierrors.IsTooManyRequests(err):
			// 429 is how the Eviction API says a PodDisruptionBudget does
			// not allow the disruption now; the next pass asks again.
			res.Remaining++
			if err := d.blocked(ctx, &pod, res); err != nil {
				return err
			}
		default:
			res.Remaining++
			if res.Failed == nil {
				res.Failed = map[string]string{}
			}
			res.Failed[key] = err.Error()
		}
	}
	if err := d.drainVolumePods(ctx, node, withVolumes, opts, res); err != nil {
		return fmt.Errorf("draining the pods with volumes of node %s: %w", node.Name, err)
	}
	return nil
}

// blocked records a pod whose eviction a PodDisruptionBudget refused, and
// whether that budget is misconfigured.
func (d *Drainer) blocked(ctx context.Context, pod *corev1.Pod, res *Result) error {
	key := pod.Namespace + "/" + pod.Name
	res.Blocked = append(res.Blocked, key)
	name, err := d.misconfiguredPDB(ctx, pod)
	if err != nil || name == "" {
		return err
	}
	if res.Misconfigured == nil {
		res.Misconfigured = map[string]string{}
	}
	res.Misconfigured[key] = name
	return nil
}

// remove evicts the pod or, when forced, deletes it with a zero grace
// period. A pod in a namespace that is being deleted cannot be evicted; it is
// deleted with its own grace period instead, because the namespace's deletion
// removes it anyway and a PodDisruptionBudget no longer protects anything.
func (d *Drainer) remove(ctx context.Context, helper *kubedrain.Helper, pod corev1.Pod, force bool) error {
	if force {
		return helper.DeletePod(pod)
	}
	err := d.evict(ctx, pod)
	if apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return helper.DeletePod(pod)
	}
	return err
}

// evict asks the Eviction API (policy/v1) to evict the pod, once. The
// request is sent without client-go's automatic retries: those honour the
// Retry-After of a 429 and would keep a worker waiting for a
// PodDisruptionBudget for minutes, which is the next pass's job.
func (d *Drainer) evict(ctx context.Context, pod corev1.Pod) error {
	eviction := &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name},
	}
	return d.client.PolicyV1().RESTClient().Post().
		AbsPath("/api/v1").
		Namespace(pod.Namespace).
		Resource("pods").
		Name(pod.Name).
		SubResource("eviction").
		MaxRetries(0).
		Body(eviction).
		Do(ctx).
		Error()
}

// helper configures kubectl's drain helper with machina's pod filters
// (drainorder.Filters) and, when forced, deletion with a zero grace period
// instead of eviction.
func (d *Drainer) helper(ctx context.Context, opts Options) *kubedrain.Helper {
	h := drainorder.Filters(ctx, d.client)
	if opts.Force {
		h.GracePeriodSeconds = 0
		h.DisableEviction = true
	}
	return h
}

// cordon marks the Node unschedulable so that evicted pods are not placed
// back on it.
func (d *Drainer) cordon(ctx context.Context, node *corev1.Node) error {
	ch := kubedrain.NewCordonHelper(node)
	if !ch.UpdateIfRequired(true) {
		return nil
	}
	err, patchErr := ch.PatchOrReplaceWithContext(ctx, d.client, false)
	if err != nil {
		return fmt.Errorf("cordoning node %s: %w", node.Name, err)
	}
	if patchErr != nil {
		return fmt.Errorf("cordoning node %s: building patch: %w", node.Name, patchErr)
	}
	return nil
}

func abbreviate(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:max], ", ") + fmt.Sprintf(" and %d more", len(items)-max)
}
