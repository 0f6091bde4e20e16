package secret

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "secret"

// ReasonDeletionBlocked is the reason of the event on a Secret that is being
// deleted while a MachineClass still refers to it.
const ReasonDeletionBlocked = "DeletionBlocked"

// Reconciler keeps the finalizer on Secrets that MachineClasses refer to.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Recorder records events on Secrets.
	Recorder events.EventRecorder
}

// secretGVK is the kind of the metadata-only Secrets the controller handles.
var secretGVK = corev1.SchemeGroupVersion.WithKind("Secret")

// SetupWithManager registers the controller, and the cache index of classes
// by the secrets they refer to, with the manager, with the given number of
// concurrent workers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, env setup.Env) error {
	workers := env.Workers
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = setup.Recorder(mgr, ControllerName)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.MachineClass{}, secretRefIndex, indexSecretRefs); err != nil {
		return fmt.Errorf("indexing machine classes by secret: %w", err)
	}
	// Only the finalizers and the deletion of a Secret matter here, not its
	// data: a rotated credential needs nothing from this controller.
	secretChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !equalStrings(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers()) ||
				e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
	// A class matters when it appears, disappears or changes its references.
	classRefsChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !equalStrings(indexSecretRefs(e.ObjectOld), indexSecretRefs(e.ObjectNew))
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Secret{}, builder.OnlyMetadata, builder.WithPredicates(secretChanged)).
		Watches(&v1alpha1.MachineClass{}, handler.EnqueueRequestsFromMapFunc(secretsOfClassObject),
			builder.WithPredicates(classRefsChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(workers, 1)}).
		Complete(r)
}

var _ reconcile.Reconciler = &Reconciler{}

// secretsOfClassObject maps a class to the secrets it refers to in its own
// namespace. The manager watches only its namespace, so a secret elsewhere
// is out of its reach and gets no finalizer. For updates controller-runtime
// calls it with the old and the new class, so a secret that loses its class
// hears of it.
func secretsOfClassObject(_ context.Context, obj client.Object) []reconcile.Request {
	class, ok := obj.(*v1alpha1.MachineClass)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, key := range SecretsOfClass(class) {
		if key.Namespace == class.Namespace {
			out = append(out, reconcile.Request{NamespacedName: key})
		}
	}
	return out
}

// Reconcile puts the finalizer on a referenced secret and removes it from a
// secret no class refers to. A conflict (the secret changed since the cache
// copy) is setup's conflict policy: reconciled again soon, no error.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return setup.RequeueOnConflict(ctrl.Result{}, r.reconcile(ctx, req))
}

func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) error {
	secret := &metav1.PartialObjectMetadata{}
	secret.SetGroupVersionKind(secretGVK)
	if err := r.Client.Get(ctx, req.NamespacedName, secret); err != nil {
		return client.IgnoreNotFound(err)
	}
	classes, err := classesReferring(ctx, r.Client, req.NamespacedName)
	if err != nil {
		return err
	}
	has := controllerutil.ContainsFinalizer(secret, v1alpha1.SecretFinalizer)
	log := ctrl.LoggerFrom(ctx)

	switch {
	case len(classes) == 0 && has:
		// A live secret may gain another controller's finalizer meanwhile:
		// unlike setup.RemoveFinalizer's (for objects being deleted), this
		// patch carries the resourceVersion, so that it is not overwritten.
		p := setup.NewPatcher(r.Client, secret, setup.LockObject())
		controllerutil.RemoveFinalizer(secret, v1alpha1.SecretFinalizer)
		if err := p.Patch(ctx, secret); err != nil {
			return client.IgnoreNotFound(fmt.Errorf("removing finalizer from secret: %w", err))
		}
		log.Info("Removed finalizer from secret: no machine class refers to it")
	case len(classes) > 0 && !secret.DeletionTimestamp.IsZero():
		// Held by the finalizer (or, if it never got one, about to go).
		// Either way the classes that still use it should be named.
		r.Recorder.Eventf(secret, nil, corev1.EventTypeWarning, ReasonDeletionBlocked, "Delete",
			"Secret is being deleted but %s still refers to it", describeClasses(classes))
		log.Info("Secret deletion blocked: still referenced", "machineClasses", classes)
	case len(classes) > 0 && !has:
		if err := setup.AddFinalizer(ctx, r.Client, secret, v1alpha1.SecretFinalizer); err != nil {
			return fmt.Errorf("adding finalizer to secret: %w", err)
		}
		log.V(1).Info("Added finalizer to secret", "machineClasses", classes)
	}
	return nil
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
