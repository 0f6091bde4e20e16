package healthcheck_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/controller/controllertest"
	"github.com/machina-io/machina/core/internal/controller/healthcheck"
	"github.com/machina-io/machina/core/testenv"
)

// The remediation kinds of the tests: an external remediation controller's
// template and request, as Metal3's Metal3RemediationTemplate and
// Metal3Remediation. Their spec takes anything.
const (
	remediationGroup    = "remediation.test.machina.io"
	remediationVersion  = remediationGroup + "/v1"
	templateKind        = "TestRemediationTemplate"
	requestKind         = "TestRemediation"
	remediationTemplate = "reboot"
	orphanTemplateKind  = "OrphanRemediationTemplate"
)

// installRemediationCRDs installs the test's template and request kinds in
// the control cluster.
func installRemediationCRDs(t *testing.T, env *testenv.Env) {
	t.Helper()
	crd := func(kind, plural string) *apiextensionsv1.CustomResourceDefinition {
		return &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + "." + remediationGroup},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: remediationGroup, Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: plural[:len(plural)-1]},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"spec": {XPreserveUnknownFields: ptr.To(true)},
						},
					}},
				}},
			},
		}
	}
	_, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		crd(templateKind, "testremediationtemplates"), crd(requestKind, "testremediations"),
		// A provider installed by half: its requests are not served.
		crd(orphanTemplateKind, "orphanremediationtemplates"),
	}})
	require.NoError(t, err)
}

// externalRemediation runs the subtests of spec.remediationTemplate.
func externalRemediation(t *testing.T, f *fixture) {
	withTemplate := func(c *machinaio.MachineHealthCheck) {
		c.Spec.RemediationTemplate = &machinaio.RemediationTemplateReference{
			APIVersion: remediationVersion, Kind: templateKind, Name: remediationTemplate}
	}

	t.Run("an unhealthy machine gets a remediation request, not a deletion, until it is healthy", func(t *testing.T) {
		f := f.sub(t, "external")
		f.template(map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "metal"}},
			"spec":     map[string]any{"strategy": map[string]any{"type": "Reboot", "retryLimit": int64(2)}},
		})
		sick := f.machine("sick", true, "")
		f.node(sick, corev1.ConditionFalse, 10*time.Minute)
		// No MachineSet controls it: a deletion would replace nothing, a
		// reboot helps all the same.
		bare := f.machine("bare", false, "")
		f.node(bare, corev1.ConditionFalse, 10*time.Minute)
		fine := f.machine("fine", true, "")
		f.node(fine, corev1.ConditionTrue, 10*time.Minute)
		check := f.check(withTemplate)

		req := f.request(sick)
		assert.Equal(t, map[string]any{"strategy": map[string]any{"type": "Reboot", "retryLimit": int64(2)}}, req.Object["spec"])
		assert.Equal(t, map[string]string{"team": "metal"}, req.GetLabels())
		assert.Equal(t, remediationTemplate, req.GetAnnotations()[machinaio.ClonedFromNameAnnotation])
		assert.Equal(t, templateKind+"."+remediationGroup, req.GetAnnotations()[machinaio.ClonedFromGroupKindAnnotation])
		require.Len(t, req.GetOwnerReferences(), 1)
		owner := req.GetOwnerReferences()[0]
		assert.Equal(t, metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine", Name: sick.Name, UID: sick.UID}, owner)
		f.request(bare)
		controllertest.RequireEvent(t, f.cc, sick, healthcheck.ReasonExternalRemediationRequested,
			"MachineHealthCheck workers created TestRemediation sick to remediate the machine: node external-sick has condition Ready=False")
		got := f.status(check, func(st machinaio.MachineHealthCheckStatus) bool { return st.ExpectedMachines == 3 })
		cond := meta.FindStatusCondition(got.Conditions, machinaio.RemediationAllowedCondition)
		require.NotNil(t, cond)
		assert.Equal(t, metav1.ConditionTrue, cond.Status)
		// The run that created the requests deleted nothing.
		f.requireExists(sick)
		f.requireExists(bare)
		f.requireNoRequest(fine)

		// The external controller rebooted it: healthy again, the request
		// goes; the other one stays.
		f.setReady(sick, corev1.ConditionTrue, time.Second)
		controllertest.RequireGone(t, f.cc, req)
		controllertest.RequireEvent(t, f.cc, sick, healthcheck.ReasonExternalRemediationEnded, "deleted TestRemediation sick")
		f.request(bare)
		f.requireExists(sick)
	})

	t.Run("a missing template remediates nothing and says why", func(t *testing.T) {
		f := f.sub(t, "notemplate")
		sick := f.machine("sick", true, "")
		f.node(sick, corev1.ConditionFalse, 10*time.Minute)
		check := f.check(withTemplate)
		f.status(check, func(st machinaio.MachineHealthCheckStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, machinaio.RemediationAllowedCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == machinaio.ReasonRemediationTemplateUnavailable &&
				c.Message == `reading remediation template TestRemediationTemplate reboot: testremediationtemplates.remediation.test.machina.io "reboot" not found; nothing is remediated`
		})
		controllertest.RequireEvent(t, f.cc, check, healthcheck.ReasonRemediationTemplateUnavailable, `"reboot" not found; nothing is remediated`)
		f.requireExists(sick)
		f.requireNoRequest(sick)

		// The template appears; the next run (brought by a change of the
		// machine) requests the remediation.
		f.template(map[string]any{"spec": map[string]any{"strategy": "Reboot"}})
		f.annotate(sick, "test.machina.io/touched")
		f.request(sick)
		f.status(check, func(st machinaio.MachineHealthCheckStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, machinaio.RemediationAllowedCondition)
			return c != nil && c.Status == metav1.ConditionTrue
		})
		f.requireExists(sick)
	})

	t.Run("a template without spec.template is refused", func(t *testing.T) {
		f := f.sub(t, "badtemplate")
		f.templateObject(map[string]any{"template": "reboot please"})
		sick := f.machine("sick", true, "")
		f.node(sick, corev1.ConditionFalse, 10*time.Minute)
		check := f.check(withTemplate)
		f.status(check, func(st machinaio.MachineHealthCheckStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, machinaio.RemediationAllowedCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == machinaio.ReasonRemediationTemplateInvalid &&
				c.Message == "remediation template TestRemediationTemplate reboot: spec.template is missing or not an object; nothing is remediated"
		})
		f.requireExists(sick)
		f.requireNoRequest(sick)
	})

	t.Run("requests that cannot be made remediate nothing and say why", func(t *testing.T) {
		f := f.sub(t, "norequests")
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"template": map[string]any{}}}}
		u.SetAPIVersion(remediationVersion)
		u.SetKind(orphanTemplateKind)
		u.SetNamespace(f.ns)
		u.SetName(remediationTemplate)
		require.NoError(t, f.cc.Create(t.Context(), u))
		sick := f.machine("sick", true, "")
		f.node(sick, corev1.ConditionFalse, 10*time.Minute)
		check := f.check(func(c *machinaio.MachineHealthCheck) {
			withTemplate(c)
			c.Spec.RemediationTemplate.Kind = orphanTemplateKind
		})
		f.status(check, func(st machinaio.MachineHealthCheckStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, machinaio.RemediationAllowedCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == machinaio.ReasonRemediationRequestFailed &&
				strings.HasPrefix(c.Message, "listing OrphanRemediation remediation requests: ")
		})
		controllertest.RequireEvent(t, f.cc, check, healthcheck.ReasonRemediationRequestFailed, "listing OrphanRemediation remediation requests")
		f.requireExists(sick)
	})

	t.Run("a template of another namespace is refused", func(t *testing.T) {
		f := f.sub(t, "othernamespace")
		sick := f.machine("sick", true, "")
		f.node(sick, corev1.ConditionFalse, 10*time.Minute)
		check := f.check(func(c *machinaio.MachineHealthCheck) {
			withTemplate(c)
			c.Spec.RemediationTemplate.Namespace = "kube-system"
		})
		f.status(check, func(st machinaio.MachineHealthCheckStatus) bool {
			c := meta.FindStatusCondition(st.Conditions, machinaio.RemediationAllowedCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == machinaio.ReasonInvalidSpec &&
				c.Message == `spec.remediationTemplate.namespace "kube-system" is not the check's namespace "`+f.ns+`"`
		})
		f.requireExists(sick)
	})
}

// template creates the subtest's remediation template with spec.template
// set to tmpl.
func (f *fixture) template(tmpl map[string]any) {
	f.templateObject(map[string]any{"template": tmpl})
}

// templateObject creates the subtest's remediation template with spec.
func (f *fixture) templateObject(spec map[string]any) {
	f.t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(remediationVersion)
	u.SetKind(templateKind)
	u.SetNamespace(f.ns)
	u.SetName(remediationTemplate)
	require.NoError(f.t, f.cc.Create(f.t.Context(), u))
}

func requestOf(m *v1alpha1.Machine) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(remediationVersion)
	u.SetKind(requestKind)
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	return u
}

// request waits for the remediation request of m and returns it.
func (f *fixture) request(m *v1alpha1.Machine) *unstructured.Unstructured {
	f.t.Helper()
	u := requestOf(m)
	var err error
	require.Eventually(f.t, func() bool {
		err = f.cc.Get(f.t.Context(), client.ObjectKeyFromObject(u), u)
		return err == nil
	}, controllertest.WaitFor, controllertest.Tick, "no %s for machine %s: %v", requestKind, m.Name, err)
	return u
}

// requireNoRequest checks that m has no remediation request now.
func (f *fixture) requireNoRequest(m *v1alpha1.Machine) {
	f.t.Helper()
	u := requestOf(m)
	err := f.cc.Get(f.t.Context(), client.ObjectKeyFromObject(u), u)
	require.True(f.t, apierrors.IsNotFound(err), "machine %s has a %s: %v", m.Name, requestKind, err)
}
