package mcpool

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/drainorder"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/drain"
)

// DrainControllerName names the drain controller in logs, metrics and
// events.
const DrainControllerName = "machineconfig-drain"

// Event reasons of the drain controller (on the Node).
const (
	ReasonDrained        = "Drained"
	ReasonUncordoned     = "Uncordoned"
	ReasonDrainFailed    = "DrainFailed"
	ReasonBadDrainAction = "InvalidDrainRequest"
	// ReasonDrainWaiting: the drain waits for pods a MachineDrainRule (or
	// a pod's drain label) says to let complete; once per set of pods.
	ReasonDrainWaiting = "DrainWaiting"
)

// drainRetry is how soon a drain that still has pods, or an uncordon that
// waits for the node to be Ready, is looked at again.
const drainRetry = 5 * time.Second

// DrainReconciler answers the node agents' drain requests of the
// MachineConfig handshake: an agent writes desiredDrain=drain-<config> or
// uncordon-<config> on its Node, this controller cordons and drains the
// Node (the same non-blocking drain a machine deletion uses, one pass per
// reconcile) or uncordons it, and acknowledges with
// lastAppliedDrain=<the request>. The agent drains nothing itself. An
// uncordon waits until the Node is Ready: the node takes work again only
// once it runs on its new configuration.
type DrainReconciler struct {
	// Target reads Nodes (from the target cluster's cache) and patches them.
	Target client.Client
	// Drainer drains Nodes of the target cluster.
	Drainer *drain.Drainer
	// Control reads Machines and MachineDrainRules (the manager's
	// cluster), so that the drain of a Node follows the rules that select
	// its Machine; mgr's client when nil.
	Control client.Client
	// Recorder records events on Nodes.
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	waits map[string]*drain.VolumeWait
	// told is, per node, the pods the last DrainWaiting event named.
	told map[string]string
}

// SetupWithManager registers the controller with mgr, watching the Nodes
// of target.
func (r *DrainReconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	target, workers := env.Target, env.Workers
	if r.Target == nil {
		r.Target = target.GetClient()
	}
	if r.Drainer == nil {
		cs, err := kubernetes.NewForConfigAndClient(target.GetConfig(), target.GetHTTPClient())
		if err != nil {
			return fmt.Errorf("%s controller: target clientset: %w", DrainControllerName, err)
		}
		r.Drainer = drain.New(cs)
	}
	if r.Control == nil {
		r.Control = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(target, DrainControllerName)
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	r.waits = map[string]*drain.VolumeWait{}
	r.told = map[string]string{}
	// A Node matters when its drain request or acknowledgement changes,
	// or it turns Ready (an uncordon waits for it).
	changed := predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.Annotations[annDesiredDrain] != n.Annotations[annDesiredDrain] ||
				o.Annotations[annLastAppliedDrain] != n.Annotations[annLastAppliedDrain] ||
				nodeReady(o) != nodeReady(n)
		},
		DeleteFunc: func(event.TypedDeleteEvent[*corev1.Node]) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(DrainControllerName).
		WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{},
			&handler.TypedEnqueueRequestForObject[*corev1.Node]{}, changed)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

func (r *DrainReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := r.Target.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want, acked := node.Annotations[annDesiredDrain], node.Annotations[annLastAppliedDrain]
	if want == "" || want == acked {
		r.forgetWait(node.Name)
		return ctrl.Result{}, nil
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("node", node.Name, "request", want)
	if why := unasked(node, want); why != "" {
		// Not ours to act on: the request stays unanswered and says why.
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonBadDrainAction, "Drain",
			"%s=%q is not acted on: %s", annDesiredDrain, want, why)
		log.Info("Refused the drain request", "reason", why)
		return ctrl.Result{}, nil
	}
	switch {
	case strings.HasPrefix(want, mcv1.DrainRequestPrefix):
		rules, err := r.drainRules(ctx, node.Name)
		var res drain.Result
		if err == nil {
			res, err = r.Drainer.Pass(ctx, node.Name, drain.Options{Wait: r.wait(node.Name), Now: r.Now(), Rules: rules})
		}
		if err != nil {
			r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonDrainFailed, "Drain", "Draining for %s: %v", want, err)
			return ctrl.Result{}, fmt.Errorf("draining node %s: %w", node.Name, err)
		}
		r.setWait(node.Name, res.Waiting)
		if !res.Drained() {
			log.V(1).Info("Drain goes on", "summary", res.Summary())
			r.tellWaiting(node, want, res)
			return ctrl.Result{RequeueAfter: drainRetry}, nil
		}
		if err := r.ack(ctx, node, want); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonDrained, "Drain", "Drained for %s", want)
	case strings.HasPrefix(want, mcv1.UncordonRequestPrefix):
		if !nodeReady(node) {
			log.V(1).Info("Uncordon waits for the node to be Ready")
			return ctrl.Result{RequeueAfter: drainRetry}, nil
		}
		// The uncordon and its acknowledgement in one patch.
		if err := r.ack(ctx, node, want, func(n *corev1.Node) { n.Spec.Unschedulable = false }); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonUncordoned, "Uncordon", "Uncordoned for %s", want)
	default:
		// Not ours to guess: the agent's request stays unanswered and says why.
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonBadDrainAction, "Drain",
			"%s=%q: the action must be drain-<config> or uncordon-<config>", annDesiredDrain, want)
		return ctrl.Result{}, nil
	}
	log.Info("Acknowledged the drain request")
	return ctrl.Result{}, nil
}

// unasked says why a drain or uncordon request is none of a rollout's, or
// "" when it is. A pool's rollout asks for a Node's update by writing its
// desiredConfig, which only the manager writes
// (deploy/node-agent/own-node-policy.yaml keeps it from the agents), and
// the agent asks for <verb><desiredConfig>. A request on a Node no pool
// gave a configuration, or for another configuration than the one it was
// given, is acted on by no one: acting on it would let whoever writes
// desiredDrain cordon and drain a Node no rollout asked for. (The agent of
// a Node may still ask for a drain of its own Node for its desiredConfig,
// also when it runs that configuration already: that is how it re-applies
// after a failure. It is root on that Node anyway.)
func unasked(node *corev1.Node, want string) string {
	desired := node.Annotations[annDesiredConfig]
	config, ok := strings.CutPrefix(want, mcv1.DrainRequestPrefix)
	if !ok {
		config, ok = strings.CutPrefix(want, mcv1.UncordonRequestPrefix)
	}
	switch {
	case !ok:
		return "" // Reconcile says what is wrong with it
	case desired == "":
		return "the node has no " + annDesiredConfig + ": no pool is updating it"
	case config != desired:
		return fmt.Sprintf("it names %q, but the node's %s is %q", config, annDesiredConfig, desired)
	}
	return ""
}

// ack writes lastAppliedDrain=want, with what also changes (if any) in the
// same merge patch.
func (r *DrainReconciler) ack(ctx context.Context, node *corev1.Node, want string, also ...func(*corev1.Node)) error {
	patched := node.DeepCopy()
	for _, change := range also {
		change(patched)
	}
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	patched.Annotations[annLastAppliedDrain] = want
	if err := r.Target.Patch(ctx, patched, client.MergeFrom(node)); err != nil {
		return fmt.Errorf("acknowledging %s on node %s: %w", want, node.Name, err)
	}
	return nil
}

// The volume wait of a drain in progress lives in memory: lost on a
// restart, the drain starts its serial part over, which only checks again
// pods that are gone already.
func (r *DrainReconciler) wait(node string) *drain.VolumeWait {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waits[node]
}

func (r *DrainReconciler) setWait(node string, w *drain.VolumeWait) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w == nil {
		delete(r.waits, node)
	} else {
		r.waits[node] = w
	}
}

func (r *DrainReconciler) forgetWait(node string) {
	r.setWait(node, nil)
	r.mu.Lock()
	delete(r.told, node)
	r.mu.Unlock()
}

// tellWaiting records a DrainWaiting event when the drain waits for pods
// to complete (a MachineDrainRule's WaitCompleted, a pod's drain label)
// and the pods differ from the ones last told: an operator sees why the
// pool's node is not drained without an event every pass.
func (r *DrainReconciler) tellWaiting(node *corev1.Node, want string, res drain.Result) {
	if len(res.WaitCompleted) == 0 {
		return
	}
	key := fmt.Sprint(res.WaitCompleted) // fmt sorts map keys
	r.mu.Lock()
	same := r.told[node.Name] == key
	r.told[node.Name] = key
	r.mu.Unlock()
	if !same {
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, ReasonDrainWaiting, "Drain", "Draining for %s: %s", want, res.Summary())
	}
}

// nodeReady reports the Node's Ready condition True.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// drainRules are the MachineDrainRules that select the Machine of the Node
// (the Machine labelled node=<name>); none when no Machine has the Node or
// the kind is not served. The error names a rule whose selector does not
// parse: the drain stops there rather than evict what it meant to keep.
func (r *DrainReconciler) drainRules(ctx context.Context, nodeName string) (*drainorder.Rules, error) {
	var machines v1alpha1.MachineList
	if err := r.Control.List(ctx, &machines, client.MatchingLabels{v1alpha1.NodeLabelKey: nodeName}); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("finding the machine of node %s: %w", nodeName, err)
	}
	if len(machines.Items) == 0 {
		return nil, nil
	}
	m := &machines.Items[0]
	var list machinaio.MachineDrainRuleList
	if err := r.Control.List(ctx, &list, client.InNamespace(m.Namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing the MachineDrainRules of namespace %s: %w", m.Namespace, err)
	}
	return drainorder.ForMachine(list.Items, m.Labels)
}
