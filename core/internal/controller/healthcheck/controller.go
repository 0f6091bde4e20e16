package healthcheck

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
	"github.com/machina-io/machina/core/internal/freeze"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "machinehealthcheck"

// Reconciler runs the MachineHealthChecks.
type Reconciler struct {
	// Control reads MachineHealthChecks and Machines (the manager's cache)
	// and writes them.
	Control client.Client
	// Reader reads remediation templates and requests straight from the
	// API server: their kinds are any the checks name, so none is cached
	// (and the manager needs no list or watch rights on templates).
	Reader client.Reader
	// Target reads Nodes, from the target cluster's cache.
	Target client.Client
	// Recorder records events on checks and Machines.
	Recorder events.EventRecorder
	// Gate, while it holds the health timeouts (the API servers are or were
	// just unreachable), holds remediation too; nil never holds.
	Gate *freeze.Gate
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// SetupWithManager registers the controller with mgr, whose cluster holds
// the checks and Machines, reading the Nodes of target, with workers
// concurrent reconciles.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	target, workers := env.Target, env.Workers
	if target == nil {
		return errors.New("machinehealthcheck controller: a target cluster is required")
	}
	if r.Control == nil {
		r.Control = mgr.GetClient()
	}
	if r.Reader == nil {
		r.Reader = mgr.GetAPIReader()
	}
	if r.Target == nil {
		r.Target = target.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(mgr, ControllerName)
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if err := setup.IndexMachines(mgr); err != nil {
		return err
	}
	// The Machine and Node handlers list the checks: the checks' informer
	// starts with the cache, not when this controller's own watch
	// registers it, which may come after the first of those events.
	if err := setup.InformAtStart(mgr, &machinaio.MachineHealthCheck{}); err != nil {
		return err
	}
	// A Node matters when it appears or goes, or its conditions change
	// (type, status or transition time); heartbeats do not.
	nodeChanged := predicate.TypedFuncs[*corev1.Node]{
		UpdateFunc: func(e event.TypedUpdateEvent[*corev1.Node]) bool {
			return !slices.EqualFunc(e.ObjectOld.Status.Conditions, e.ObjectNew.Status.Conditions, sameCondition)
		},
	}
	return setup.NewController(mgr, ControllerName, &machinaio.MachineHealthCheck{}, workers, r.Gate,
		func() client.ObjectList { return &machinaio.MachineHealthCheckList{} }).
		Watches(&v1alpha1.Machine{}, handler.EnqueueRequestsFromMapFunc(r.checksOfMachine), builder.WithPredicates(machineJudged())).
		WatchesRawSource(source.Kind(target.GetCache(), &corev1.Node{},
			handler.TypedEnqueueRequestsFromMapFunc(r.checksOfNode), nodeChanged)).
		Complete(r)
}

var _ reconcile.Reconciler = &Reconciler{}

// machineJudged passes the Machine updates that can change a check's
// verdict: what selects the machine (labels), exempts or asks for it
// (annotations), who owns it, its deletion and its phase. The Machine
// controller's other status writes (lastOperation, conditions, addresses,
// several per machine while a fleet scales) would each re-judge every
// machine of the checks that select it.
func machineJudged() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		o, okOld := e.ObjectOld.(*v1alpha1.Machine)
		n, okNew := e.ObjectNew.(*v1alpha1.Machine)
		if !okOld || !okNew {
			return true
		}
		return !maps.Equal(o.Labels, n.Labels) || !maps.Equal(o.Annotations, n.Annotations) ||
			!equality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences) ||
			!o.DeletionTimestamp.Equal(n.DeletionTimestamp) ||
			o.Status.CurrentStatus.Phase != n.Status.CurrentStatus.Phase
	}}
}

func sameCondition(a, b corev1.NodeCondition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.LastTransitionTime.Equal(&b.LastTransitionTime)
}

// checksOfMachine maps a Machine to the checks of its namespace that select
// it. For an update controller-runtime calls it with the old and the new
// Machine, so a check that stops selecting a machine hears of it too.
func (r *Reconciler) checksOfMachine(ctx context.Context, obj client.Object) []reconcile.Request {
	checks := &machinaio.MachineHealthCheckList{}
	if err := r.Control.List(ctx, checks, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the MachineHealthChecks of a machine", "machine", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range checks.Items {
		sel, err := parseSpec(&checks.Items[i].Spec)
		if err != nil || sel.Matches(labels.Set(obj.GetLabels())) {
			// A check with a bad spec is reconciled anyway: it reports why.
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&checks.Items[i])})
		}
	}
	return reqs
}

// checksOfNode maps a Node to the checks of the Machines naming it.
func (r *Reconciler) checksOfNode(ctx context.Context, node *corev1.Node) []reconcile.Request {
	machines := &v1alpha1.MachineList{}
	if err := r.Control.List(ctx, machines, client.MatchingFields{setup.MachineNodeIndex: node.Name}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the machines of a node", "node", node.Name)
		return nil
	}
	var reqs []reconcile.Request
	for i := range machines.Items {
		for _, req := range r.checksOfMachine(ctx, &machines.Items[i]) {
			if !slices.Contains(reqs, req) {
				reqs = append(reqs, req)
			}
		}
	}
	return reqs
}
