package mcrender

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/internal/controller/phase"
	"github.com/machina-io/machina/core/internal/controller/setup"
)

// writeRendered creates the rendered MachineConfig, unless it exists: its
// name is its content's hash, so an existing one is the same
// configuration. It is owned by the pool (the pool's deletion deletes it).
func (r *Reconciler) writeRendered(ctx context.Context, s *scope) (phase.Result, error) {
	existing := &mcfgv1.MachineConfig{}
	err := r.Client.Get(ctx, client.ObjectKey{Name: s.name}, existing)
	if err == nil {
		if !sameConfig(existing, s.rendered) {
			// Somebody wrote a different config under the rendered name.
			s.fail(reasonBadFragment, fmt.Sprintf("MachineConfig %s exists with a different content than its name's hash says; delete it to render again", s.name))
			return phase.Result{Stop: true}, nil
		}
		return phase.Result{}, r.adopt(ctx, s, existing)
	}
	if !apierrors.IsNotFound(err) {
		return phase.Result{}, fmt.Errorf("reading %s: %w", s.name, err)
	}
	if size, err := json.Marshal(s.rendered.spec); err == nil && len(size) > mcfgv1.MaxRenderedSize {
		s.fail(reasonTooLarge, fmt.Sprintf("the rendered configuration is %d KiB, more than the %d KiB a MachineConfig may hold to be stored; make the fragments smaller (compress files with gzip)",
			len(size)>>10, mcfgv1.MaxRenderedSize>>10))
		return phase.Result{Stop: true}, nil
	}
	mc := &mcfgv1.MachineConfig{
		ObjectMeta: metav1.ObjectMeta{
			Name: s.name,
			Annotations: map[string]string{
				mcfgv1.GeneratedByControllerVersionAnnotation: r.ControllerVersion,
				mcfgv1.RenderedFromPoolAnnotation:             s.pool.Name,
			},
		},
		Spec: s.rendered.spec,
	}
	if s.rendered.osImageOverridden {
		mc.Annotations[mcfgv1.OSImageURLOverriddenAnnotation] = "true"
	}
	if err := controllerutil.SetControllerReference(s.pool, mc, r.Client.Scheme()); err != nil {
		return phase.Result{}, err
	}
	if err := r.Client.Create(ctx, mc); err != nil && !apierrors.IsAlreadyExists(err) {
		return phase.Result{}, fmt.Errorf("creating %s: %w", s.name, err)
	}
	s.log.Info("Created rendered MachineConfig", "machineConfig", s.name, "sources", len(s.fragments))
	return phase.Result{}, nil
}

// sameConfig compares the content of an existing rendered configuration
// with a new rendering, the config as JSON values (the API server may
// reorder keys).
func sameConfig(existing *mcfgv1.MachineConfig, r *rendered) bool {
	a, b := existing.Spec.DeepCopy(), r.spec.DeepCopy()
	ca, errA := configMap(a.Config)
	cb, errB := configMap(b.Config)
	a.Config, b.Config = runtime.RawExtension{}, runtime.RawExtension{}
	return errA == nil && errB == nil && equality.Semantic.DeepEqual(ca, cb) && equality.Semantic.DeepEqual(a, b)
}

// pointPool makes the rendered configuration the pool's target
// (spec.configuration), with the fragments it was made from.
func (r *Reconciler) pointPool(ctx context.Context, s *scope) (phase.Result, error) {
	want := mcfgv1.MachineConfigPoolStatusConfiguration{
		ObjectReference: corev1.ObjectReference{Name: s.name},
		Source:          sources(s.fragments),
	}
	if equality.Semantic.DeepEqual(s.pool.Spec.Configuration, want) {
		return phase.Result{}, nil
	}
	previous := s.pool.Spec.Configuration.Name
	s.pool.Spec.Configuration = want
	// Only the spec changed so far: the status is written after the
	// phases (writeStatus), from what the API server answers here.
	if err := s.patcher.Patch(ctx, s.pool); err != nil {
		return phase.Result{}, fmt.Errorf("pointing the pool at %s: %w", s.name, err)
	}
	if previous != s.name {
		s.log.Info("Pool target configuration changed", "from", previous, "to", s.name)
		r.Recorder.Eventf(s.pool, nil, corev1.EventTypeNormal, ReasonRendered, "Render",
			"Target configuration %s, rendered from %d MachineConfigs (was %q)", s.name, len(s.fragments), previous)
	}
	return phase.Result{}, nil
}

// sources references the fragments in merge order.
func sources(fragments []mcfgv1.MachineConfig) []corev1.ObjectReference {
	out := make([]corev1.ObjectReference, 0, len(fragments))
	for _, f := range fragments {
		out = append(out, corev1.ObjectReference{
			APIVersion: mcfgv1.GroupVersion.String(), Kind: "MachineConfig", Name: f.Name,
		})
	}
	return slices.Clip(out)
}

// adopt makes the pool the controller of a rendering left by an earlier
// pool of the same name (deleted and created again): the owner reference
// to the gone pool would have the garbage collector delete the new pool's
// target.
func (r *Reconciler) adopt(ctx context.Context, s *scope, mc *mcfgv1.MachineConfig) error {
	if ref := metav1.GetControllerOf(mc); ref != nil && ref.UID == s.pool.UID {
		return nil
	}
	p := setup.NewPatcher(r.Client, mc, setup.LockObject())
	mc.OwnerReferences = nil
	if err := controllerutil.SetControllerReference(s.pool, mc, r.Client.Scheme()); err != nil {
		return err
	}
	if err := p.Patch(ctx, mc); err != nil {
		return fmt.Errorf("adopting %s: %w", mc.Name, err)
	}
	s.log.Info("Adopted rendered MachineConfig of an earlier pool of the same name", "machineConfig", mc.Name)
	return nil
}
