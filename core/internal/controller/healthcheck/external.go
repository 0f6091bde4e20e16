package healthcheck

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/phase"
)

// Event reasons of external remediation.
const (
	// ReasonExternalRemediationRequested (on the machine, the check
	// related): a remediation request was created for it.
	ReasonExternalRemediationRequested = "ExternalRemediationRequested"
	// ReasonExternalRemediationEnded (on the machine, the check related):
	// the machine is healthy again and its request was deleted.
	ReasonExternalRemediationEnded = "ExternalRemediationEnded"
	// ReasonRemediationTemplateUnavailable (on the check): its template
	// cannot be read or used; nothing is remediated.
	ReasonRemediationTemplateUnavailable = "RemediationTemplateUnavailable"
	// ReasonRemediationRequestFailed (on the check): a request could not be
	// listed, created or deleted.
	ReasonRemediationRequestFailed = "RemediationRequestFailed"
)

// templateRecheck is how soon a check whose template cannot be read or used
// looks again: templates are of any kind, so none is watched.
const templateRecheck = time.Minute

// templateRef checks spec.remediationTemplate beyond the schema: a
// group/version, a kind ending in Template, and no other namespace than the
// check's (a check must not read, through the manager's rights, a template
// its author could not). It returns the kind of the requests.
func templateRef(check *machinaio.MachineHealthCheck) (schema.GroupVersionKind, error) {
	ref := check.Spec.RemediationTemplate
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil || gv.Group == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("spec.remediationTemplate.apiVersion %q is not group/version", ref.APIVersion)
	}
	kind := strings.TrimSuffix(ref.Kind, machinaio.TemplateSuffix)
	if kind == ref.Kind || kind == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("spec.remediationTemplate.kind %q does not end in %s", ref.Kind, machinaio.TemplateSuffix)
	}
	if ref.Name == "" {
		return schema.GroupVersionKind{}, fmt.Errorf("spec.remediationTemplate.name is empty")
	}
	if ref.Namespace != "" && ref.Namespace != check.Namespace {
		return schema.GroupVersionKind{}, fmt.Errorf("spec.remediationTemplate.namespace %q is not the check's namespace %q", ref.Namespace, check.Namespace)
	}
	return gv.WithKind(kind), nil
}

// remediateExternally asks for the remediation of the unhealthy machines
// by creating a request for each (once: a request of the machine's name
// stands), and deletes the request of each machine that is healthy again.
// A template it cannot use stops it: no request is created and no machine
// deleted instead.
func (r *Reconciler) remediateExternally(ctx context.Context, s *scope) (phase.Result, error) {
	reqKind := s.requestKind
	template, err := r.readTemplate(ctx, s.check)
	if err != nil {
		reason := machinaio.ReasonRemediationTemplateUnavailable
		if errors.As(err, new(invalidTemplate)) {
			reason = machinaio.ReasonRemediationTemplateInvalid
		}
		r.report(s, reason, ReasonRemediationTemplateUnavailable, err.Error()+"; nothing is remediated")
		return phase.Result{RequeueAfter: templateRecheck, Stop: true}, nil
	}
	existing, err := r.requests(ctx, s.check.Namespace, reqKind)
	if err != nil {
		r.report(s, machinaio.ReasonRemediationRequestFailed, ReasonRemediationRequestFailed, err.Error())
		return phase.Result{}, err
	}
	for _, v := range s.verdicts {
		m := v.machine
		req, found := existing[m.Name]
		switch {
		case v.healthy:
			if found && req.GetDeletionTimestamp().IsZero() {
				if err := r.endRequest(ctx, s, m, req); err != nil {
					return phase.Result{}, err
				}
			}
		case v.unhealthy == "", found:
			// Not judged unhealthy (yet), or its request stands: the
			// external controller works on it.
			continue
		case m.Status.CurrentStatus.Phase == v1alpha1.MachineFailed:
			// As for a deletion: the Failed flow (its MachineSet's
			// replacement, or preservation) owns the machine already.
			continue
		default:
			if err := r.request(ctx, s, m, v.unhealthy, reqKind, template); err != nil {
				return phase.Result{}, err
			}
		}
	}
	return phase.Result{}, nil
}

// invalidTemplate is a template read but unusable: its content is wrong,
// not its reference or the rights to read it.
type invalidTemplate struct{ error }

// requestSource is what a remediation request is made of: the template's
// spec.template.
type requestSource struct {
	// templateGK names the template, for the cloned-from annotation.
	templateGK  string
	labels      map[string]string
	annotations map[string]string
	// spec is spec.template.spec, nil when the template has none.
	spec map[string]any
}

// readTemplate reads the check's template from the API server (templates
// are of any kind, so none is cached) and takes its spec.template apart.
func (r *Reconciler) readTemplate(ctx context.Context, check *machinaio.MachineHealthCheck) (*requestSource, error) {
	ref := check.Spec.RemediationTemplate
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(ref.Kind)
	if err := r.Reader.Get(ctx, client.ObjectKey{Namespace: check.Namespace, Name: ref.Name}, u); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("remediation template %s %s: the API server serves no kind %s in %s", ref.Kind, ref.Name, ref.Kind, ref.APIVersion)
		}
		return nil, fmt.Errorf("reading remediation template %s %s: %w", ref.Kind, ref.Name, err)
	}
	bad := func(problem string) error {
		return invalidTemplate{fmt.Errorf("remediation template %s %s: %s", ref.Kind, ref.Name, problem)}
	}
	tmpl, found, err := unstructured.NestedMap(u.Object, "spec", "template")
	if err != nil || !found {
		return nil, bad("spec.template is missing or not an object")
	}
	src := &requestSource{templateGK: u.GroupVersionKind().GroupKind().String()}
	if src.labels, _, err = unstructured.NestedStringMap(tmpl, "metadata", "labels"); err != nil {
		return nil, bad("spec.template.metadata.labels is not a map of strings")
	}
	if src.annotations, _, err = unstructured.NestedStringMap(tmpl, "metadata", "annotations"); err != nil {
		return nil, bad("spec.template.metadata.annotations is not a map of strings")
	}
	if src.spec, _, err = unstructured.NestedMap(tmpl, "spec"); err != nil {
		return nil, bad("spec.template.spec is not an object")
	}
	return src, nil
}

// requests lists the remediation requests of the namespace by name, from
// the API server: a request created by the previous run must be seen.
func (r *Reconciler) requests(ctx context.Context, namespace string, kind schema.GroupVersionKind) (map[string]*unstructured.Unstructured, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kind.GroupVersion().WithKind(kind.Kind + "List"))
	if err := r.Reader.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing %s remediation requests: %w", kind.Kind, err)
	}
	byName := make(map[string]*unstructured.Unstructured, len(list.Items))
	for i := range list.Items {
		byName[list.Items[i].GetName()] = &list.Items[i]
	}
	return byName, nil
}

// request creates the remediation request of machine m, owned by m so that
// it goes with it.
func (r *Reconciler) request(ctx context.Context, s *scope, m *v1alpha1.Machine, why string, kind schema.GroupVersionKind, src *requestSource) error {
	req := &unstructured.Unstructured{Object: map[string]any{}}
	req.SetGroupVersionKind(kind)
	req.SetNamespace(m.Namespace)
	req.SetName(m.Name)
	req.SetLabels(maps.Clone(src.labels))
	annotations := maps.Clone(src.annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[machinaio.ClonedFromNameAnnotation] = s.check.Spec.RemediationTemplate.Name
	annotations[machinaio.ClonedFromGroupKindAnnotation] = src.templateGK
	req.SetAnnotations(annotations)
	req.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID,
	}})
	if src.spec != nil {
		req.Object["spec"] = src.spec
	}
	err := r.Control.Create(ctx, req)
	if apierrors.IsAlreadyExists(err) {
		return nil // made by a run the list did not see yet
	}
	if err != nil {
		msg := fmt.Sprintf("creating %s %s for unhealthy machine %s: %v", kind.Kind, m.Name, m.Name, err)
		r.report(s, machinaio.ReasonRemediationRequestFailed, ReasonRemediationRequestFailed, msg)
		return errors.New(msg)
	}
	ctrl.LoggerFrom(ctx).Info("Requested external remediation of an unhealthy machine", "machine", m.Name, "kind", kind.Kind, "reason", why)
	r.Recorder.Eventf(m, s.check, corev1.EventTypeNormal, ReasonExternalRemediationRequested, "Remediate",
		"MachineHealthCheck %s created %s %s to remediate the machine: %s", s.check.Name, kind.Kind, m.Name, why)
	return nil
}

// endRequest deletes the request of a machine that is healthy again.
func (r *Reconciler) endRequest(ctx context.Context, s *scope, m *v1alpha1.Machine, req *unstructured.Unstructured) error {
	uid := req.GetUID()
	err := r.Control.Delete(ctx, req, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		msg := fmt.Sprintf("deleting %s %s of healthy machine %s: %v", req.GetKind(), req.GetName(), m.Name, err)
		r.report(s, machinaio.ReasonRemediationRequestFailed, ReasonRemediationRequestFailed, msg)
		return errors.New(msg)
	}
	ctrl.LoggerFrom(ctx).Info("Ended the external remediation of a machine healthy again", "machine", m.Name, "kind", req.GetKind())
	r.Recorder.Eventf(m, s.check, corev1.EventTypeNormal, ReasonExternalRemediationEnded, "Remediate",
		"The machine is healthy again: MachineHealthCheck %s deleted %s %s", s.check.Name, req.GetKind(), req.GetName())
	return nil
}

// report sets RemediationAllowed to False with reason and msg, and records
// a Warning event (eventReason) when the condition differs from the one
// the run started with: decide set it to True in between.
func (r *Reconciler) report(s *scope, reason, eventReason, msg string) {
	setCondition(s.check, metav1.ConditionFalse, reason, msg)
	old := meta.FindStatusCondition(s.orig.Status.Conditions, machinaio.RemediationAllowedCondition)
	if old == nil || old.Status != metav1.ConditionFalse || old.Reason != reason || old.Message != msg {
		r.Recorder.Eventf(s.check, nil, corev1.EventTypeWarning, eventReason, "Remediate", "%s", msg)
	}
}
