package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	machinaio "github.com/machina-io/machina/core/api/machina/v1alpha1"
	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// testWhyHealthChecks runs "why" on machines that MachineHealthChecks
// select or not, with the checks' status written as the health check
// controller (which envtest does not run) writes it.
func (p *plugin) testWhyHealthChecks(t *testing.T) {
	const ns = "why-mhc"
	p.namespace(t, ns)
	d := p.deployment(t, ns, "workers", 2, v1alpha1.MachineDeploymentStatus{Replicas: 2})
	ms := p.machineSet(t, d, "workers-1", "1", 2, v1alpha1.MachineSetStatus{Replicas: 2}, nil)
	selected := p.poolMachine(t, ns, "workers-1-a", ms, "workers")
	other := p.poolMachine(t, ns, "workers-1-b", ms, "other")
	created := selected.CreationTimestamp.Time
	now := created.Add(6*time.Minute + 30*time.Second)

	p.healthCheck(t, ns, "workers", map[string]string{"pool": "workers"}, &metav1.Condition{
		Type: machinaio.RemediationAllowedCondition, Status: metav1.ConditionFalse, Reason: machinaio.ReasonTooManyUnhealthy,
		Message:            "3 of 5 machines are unhealthy or have no node, beyond maxUnhealthy 40% (2)",
		LastTransitionTime: metav1.NewTime(created.Add(2 * time.Minute)),
	})
	// Not run by the controller yet: no condition.
	p.healthCheck(t, ns, "workers-new", map[string]string{"pool": "workers"}, nil)
	// A check of another namespace selects none of this one's machines.
	p.healthCheck(t, "why", "elsewhere", map[string]string{"pool": "workers"}, &metav1.Condition{
		Type: machinaio.RemediationAllowedCondition, Status: metav1.ConditionTrue, Reason: machinaio.ReasonWithinLimit,
		Message: "elsewhere's message", LastTransitionTime: metav1.NewTime(created),
	})

	t.Run("selected by two checks", func(t *testing.T) {
		out, err := p.run(t, now, ns, "why", selected.Name)
		require.NoError(t, err)
		require.Regexp(t, `\n  workers +False +TooManyUnhealthy +4m30s +3 of 5 machines are unhealthy or have no node, beyond maxUnhealthy 40% \(2\)\n`, out)
		require.Regexp(t, `\n  workers-new +- +- +- +not checked yet \(no RemediationAllowed condition\)\n`, out)
		require.NotContains(t, out, "elsewhere")
		require.NotContains(t, out, "This machine has")
		golden(t, "why-healthchecks", out)
	})

	t.Run("selected by none", func(t *testing.T) {
		out, err := p.run(t, now, ns, "why", other.Name)
		require.NoError(t, err)
		require.Contains(t, out, "\nHealth checks: no MachineHealthCheck selects this machine; only the manager's health timeout (--machine-health-timeout) applies\n")
		require.NotContains(t, out, "workers-new")
	})

	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"Cluster API's skip-remediation", map[string]string{machinaio.ClusterAPISkipRemediationAnnotation: ""},
			"  This machine has " + machinaio.ClusterAPISkipRemediationAnnotation + ": every check leaves it out, neither counted nor remediated\n"},
		{"machina's skip-remediation", map[string]string{machinaio.SkipRemediationAnnotation: "true"},
			"  This machine has " + machinaio.SkipRemediationAnnotation + ": every check leaves it out"},
		{"remediate-machine", map[string]string{machinaio.RemediateMachineAnnotation: ""},
			"  This machine has " + machinaio.RemediateMachineAnnotation + ": the checks count it unhealthy and remediate it while they allow remediation\n"},
		// The controller leaves a skipped machine out before it reads
		// remediate-machine.
		{"both", map[string]string{machinaio.SkipRemediationAnnotation: "", machinaio.ClusterAPIRemediateMachineAnnotation: ""},
			"  This machine has " + machinaio.SkipRemediationAnnotation + ": every check leaves it out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, p.c.Get(t.Context(), client.ObjectKeyFromObject(selected), selected))
			selected.Annotations = tc.annotations
			require.NoError(t, p.c.Update(t.Context(), selected))
			out, err := p.run(t, now, ns, "why", selected.Name)
			require.NoError(t, err)
			require.Contains(t, out, tc.want)
			require.Contains(t, out, "TooManyUnhealthy", "the checks are still listed")
		})
	}

	t.Run("external remediation", func(t *testing.T) {
		const group = "remediation.why.test"
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: "testremediations." + group},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: group, Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: "TestRemediation", ListKind: "TestRemediationList", Plural: "testremediations", Singular: "testremediation"},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
				}},
			},
		}
		_, err := envtest.InstallCRDs(p.env.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{crd}})
		require.NoError(t, err)
		check := &machinaio.MachineHealthCheck{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "external"},
			Spec: machinaio.MachineHealthCheckSpec{
				Selector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "workers"}},
				RemediationTemplate: &machinaio.RemediationTemplateReference{
					APIVersion: group + "/v1", Kind: "TestRemediationTemplate", Name: "reboot",
				},
			},
		}
		require.NoError(t, p.c.Create(t.Context(), check))
		t.Cleanup(func() { require.NoError(t, p.c.Delete(context.Background(), check)) })

		out, err := p.run(t, now, ns, "why", selected.Name)
		require.NoError(t, err)
		require.Contains(t, out, "\n  External remediation (external): none requested (an unhealthy machine gets a TestRemediation workers-1-a, from template reboot)\n")
		require.NotContains(t, out, "External remediation (workers)", "a check without a template remediates by replacement")

		req := &unstructured.Unstructured{}
		req.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: "TestRemediation"})
		req.SetNamespace(ns)
		req.SetName(selected.Name)
		require.NoError(t, p.c.Create(t.Context(), req))
		later := req.GetCreationTimestamp().Add(90 * time.Second)
		out, err = p.run(t, later, ns, "why", selected.Name)
		require.NoError(t, err)
		require.Contains(t, out, "\n  External remediation (external): TestRemediation workers-1-a requested 90s ago: its controller remediates the machine\n")
	})

	t.Run("forbidden to list the checks", func(t *testing.T) {
		p.viewerWithoutHealthChecks(t, "why-viewer")
		// The API server's authorizer learns of the binding from a watch.
		var out string
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var err error
			out, err = p.run(t, now, ns, "why", selected.Name, "--as=why-viewer")
			assert.NoError(c, err)
		}, 20*time.Second, 50*time.Millisecond)
		require.Contains(t, out, "Machine workers-1-a in namespace why-mhc")
		require.Contains(t, out, "\nHealth checks: unknown (forbidden to list MachineHealthChecks in namespace why-mhc)\n")
	})

	// Last: it takes the kind away from the API server, and puts it back.
	t.Run("the MachineHealthCheck CRD is not installed", func(t *testing.T) {
		p.withoutHealthCheckCRD(t)
		out, err := p.run(t, now, ns, "why", selected.Name)
		require.NoError(t, err)
		require.Contains(t, out, "Machine workers-1-a in namespace why-mhc")
		require.NotContains(t, out, "Health checks")
	})
}

// poolMachine creates a Running machine of the set with the label pool.
func (p *plugin) poolMachine(t *testing.T, ns, name string, ms *v1alpha1.MachineSet, pool string) *v1alpha1.Machine {
	t.Helper()
	m := p.machine(t, ns, name, ms, "", nil, func(m *v1alpha1.Machine) {
		m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineRunning, LastUpdateTime: m.CreationTimestamp}
	})
	m.Labels = map[string]string{"pool": pool}
	require.NoError(t, p.c.Update(t.Context(), m))
	return m
}

// healthCheck creates a MachineHealthCheck and writes its condition (none
// when nil) through the status subresource.
func (p *plugin) healthCheck(t *testing.T, ns, name string, selector map[string]string, cond *metav1.Condition) {
	t.Helper()
	check := &machinaio.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: machinaio.MachineHealthCheckSpec{
			Selector:     metav1.LabelSelector{MatchLabels: selector},
			MaxUnhealthy: ptr.To(intstr.FromString("40%")),
		},
	}
	var set func()
	if cond != nil {
		set = func() {
			cond.ObservedGeneration = check.Generation
			check.Status = machinaio.MachineHealthCheckStatus{
				ExpectedMachines: 5, CurrentHealthy: 2, ObservedGeneration: check.Generation,
				Conditions: []metav1.Condition{*cond},
			}
		}
	}
	p.create(t, check, set)
}

// viewerWithoutHealthChecks lets the user read what "why" reads, except
// MachineHealthChecks.
func (p *plugin) viewerWithoutHealthChecks(t *testing.T, user string) {
	t.Helper()
	read := []string{"get", "list"}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"machines", "machinesets", "machinedeployments"}, Verbs: read},
			{APIGroups: []string{""}, Resources: []string{"nodes", "events", "pods"}, Verbs: read},
		},
	}
	require.NoError(t, p.c.Create(t.Context(), role))
	require.NoError(t, p.c.Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}))
}

// withoutHealthCheckCRD deletes the MachineHealthCheck CRD, waits until the
// API server no longer has it, and installs it again when the test ends.
func (p *plugin) withoutHealthCheckCRD(t *testing.T) {
	t.Helper()
	dir, err := testenv.CRDDir()
	require.NoError(t, err)
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	crd.SetName("machinehealthchecks." + machinaio.GroupVersion.Group)
	require.NoError(t, p.c.Delete(t.Context(), crd))
	t.Cleanup(func() {
		_, err := envtest.InstallCRDs(p.env.Config, envtest.CRDInstallOptions{
			Paths:              []string{filepath.Join(dir, "machina.io_machinehealthchecks.yaml")},
			ErrorIfPathMissing: true,
		})
		require.NoError(t, err)
	})
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(p.c.Get(t.Context(), client.ObjectKeyFromObject(crd), crd.DeepCopy()))
	}, time.Minute, 50*time.Millisecond, "the CRD is never gone")
}
