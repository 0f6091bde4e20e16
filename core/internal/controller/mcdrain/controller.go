package mcdrain

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
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
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/drain"
)

// ControllerName names the drain controller in logs, metrics and events.
const ControllerName = "machineconfig-drain"

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

// Reconciler answers the node agents' drain requests of the
// MachineConfig handshake: an agent writes desiredDrain=drain-<config> or
// uncordon-<config> on its Node, this controller cordons and drains the
// Node (the same non-blocking drain a machine deletion uses, one pass per
// reconcile) or uncordons it, and acknowledges with
// lastAppliedDrain=<the request>. The agent drains nothing itself. An
// uncordon waits until the Node is Ready: the node takes work again only
// once it runs on its new configuration.
type Reconciler struct {
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
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	target, workers := env.Target, env.Workers
	if r.Target == nil {
		r.Target = target.GetClient()
	}
	if r.Drainer == nil {
		cs, err := kubernetes.NewForConfigAndClient(target.GetConfig(), target.GetHTTPClient())
		if err != nil {
			return fmt.Errorf("%s controller: target clientset: %w", ControllerName, err)
		}
		r.Drainer = drain.New(cs)
	}
	if r.Control == nil {
		r.Control = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(target, ControllerName)
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	r.waits = map[string]*drain.VolumeWait{}
	r.told = map[string]string{}
	// A drain reads the machines and MachineDrainRules from the manager's
	// cache (rules.go).
	if r.Control == mgr.GetClient() {
		if err := setup.InformAtStart(mgr, &machinaio.MachineDrainRule{}); err != nil {
			return err
		}
	}
	// A Node matters when its drain request or acknowledgement changes,
	// or it turns Ready (an uncordon waits for it).
	changed := predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			o, n := e.ObjectOld, e.ObjectNew
			return o.Annotations[mcv1.DesiredDrainAnnotation] != n.Annotations[mcv1.DesiredDrainAnnotation] ||
				o.Annotations[mcv1.LastAppliedDrainAnnotation] != n.Annotations[mcv1.LastAppliedDrainAnnotation] ||
				nodeReady(o) != nodeReady(n)
		},
		DeleteFunc: func(event.TypedDeleteEvent[*corev1.Node]) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{},
			&handler.TypedEnqueueRequestForObject[*corev1.Node]{}, changed)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	node := &corev1.Node{}
	if err := r.Target.Get(ctx, req.NamespacedName, node); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	want, acked := node.Annotations[mcv1.DesiredDrainAnnotation], node.Annotations[mcv1.LastAppliedDrainAnnotation]
	if want == "" || want == acked {
		r.forgetWait(node.Name)
		return ctrl.Result{}, nil
	}
	log := logr.FromContextOrDiscard(ctx).WithValues("node", node.Name, "request", want)
	if why := unasked(node, want); why != "" {
		// Not ours to act on: the request stays unanswered and says why.
		r.Recorder.Eventf(node, nil, corev1.EventTypeWarning, ReasonBadDrainAction, "Drain",
			"%s=%q is not acted on: %s", mcv1.DesiredDrainAnnotation, want, why)
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
			"%s=%q: the action must be drain-<config> or uncordon-<config>", mcv1.DesiredDrainAnnotation, want)
		return ctrl.Result{}, nil
	}
	log.Info("Acknowledged the drain request")
	return ctrl.Result{}, nil
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
