package manifests_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/testenv"
)

// serviceAccountUser is how the API server sees the pod's ServiceAccount.
var serviceAccountUser = authorizationv1.SubjectAccessReviewSpec{
	User:   "system:serviceaccount:" + namespace + ":" + deploymentName,
	Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
}

// crossNamespace lists the namespaced resources a ClusterRole may grant:
// the manager drains Nodes whose pods live in any namespace. Everything
// else namespaced belongs in a Role of the one namespace where it is used.
var crossNamespace = map[string]string{
	"pods":                   "drain lists, evicts and deletes a Node's pods in every namespace",
	"pods/eviction":          "drain evicts a Node's pods in every namespace",
	"persistentvolumeclaims": "drain reads the claims of the pods it evicts",
	"poddisruptionbudgets":   "drain respects PDBs in every namespace",
	"daemonsets":             "drain leaves DaemonSet pods alone",
}

// checkRulesLeastPrivilege reads every Role and ClusterRole of the overlay:
// no wildcards, no privilege-escalation verbs, ClusterRoles only for
// cluster-scoped resources (or the listed cross-namespace ones), never
// Secrets cluster-wide, and every binding for the manager's ServiceAccount.
func checkRulesLeastPrivilege(t *testing.T, env *testenv.Env, objs []*unstructured.Unstructured) {
	mapper := env.Client.RESTMapper()
	var roles, clusterRoles int
	for _, o := range objs {
		switch o.GetKind() {
		case "Role", "ClusterRole":
			role := &rbacv1.ClusterRole{} // Role and ClusterRole share the rules' shape
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role))
			cluster := o.GetKind() == "ClusterRole"
			if cluster {
				clusterRoles++
				assert.Nil(t, role.AggregationRule, "%s aggregates other roles", o.GetName())
			} else {
				roles++
			}
			for i, rule := range role.Rules {
				where := fmt.Sprintf("%s %s rule %d", o.GetKind(), o.GetName(), i)
				assert.Empty(t, rule.NonResourceURLs, where)
				for _, field := range [][]string{rule.Verbs, rule.Resources, rule.APIGroups} {
					assert.NotContains(t, field, "*", "%s: no wildcards", where)
				}
				for _, verb := range []string{"escalate", "bind", "impersonate", "deletecollection"} {
					assert.NotContains(t, rule.Verbs, verb, where)
				}
				require.NotEmpty(t, rule.Resources, where)
				for _, group := range rule.APIGroups {
					for _, res := range rule.Resources {
						base, _, _ := strings.Cut(res, "/")
						if base == "secrets" {
							assert.False(t, cluster, "%s: Secrets only through a namespaced Role", where)
						}
						if !cluster {
							continue
						}
						namespaced, err := isNamespaced(mapper, group, base)
						require.NoError(t, err, "%s: resource %s/%s must exist", where, group, base)
						if namespaced {
							_, ok := crossNamespace[res]
							assert.True(t, ok, "%s: namespaced resource %s/%s belongs in a Role", where, group, res)
						}
					}
				}
			}
		case "RoleBinding", "ClusterRoleBinding":
			b := &rbacv1.ClusterRoleBinding{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, b))
			assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: deploymentName, Namespace: namespace}}, b.Subjects,
				"%s %s binds only the manager's ServiceAccount", o.GetKind(), o.GetName())
			if o.GetKind() == "RoleBinding" {
				assert.Equal(t, "Role", b.RoleRef.Kind, "RoleBinding %s grants a Role of its namespace", o.GetName())
			}
		}
	}
	assert.NotZero(t, roles)
	assert.NotZero(t, clusterRoles)
}

// isNamespaced asks the API server's discovery (through the RESTMapper)
// whether a resource is namespaced.
func isNamespaced(mapper meta.RESTMapper, group, resource string) (bool, error) {
	gvk, err := mapper.KindFor(schema.GroupVersionResource{Group: group, Resource: resource})
	if err != nil {
		return false, err
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return false, err
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// access is one question to the API server's authorizer.
type access struct {
	verb, group, resource, subresource, namespace, name string
	allowed                                             bool
}

func (a access) String() string {
	res := a.resource
	if a.subresource != "" {
		res += "/" + a.subresource
	}
	if a.group != "" {
		res += "." + a.group
	}
	where := "cluster-wide"
	if a.namespace != "" {
		where = "in " + a.namespace
	}
	if a.name != "" {
		where += " named " + a.name
	}
	return fmt.Sprintf("%s %s %s", a.verb, res, where)
}

const (
	machineGroup = "machine.sapcloud.io"
	other        = "default"
)

// commonAccess is what the manager's ServiceAccount may and may not do with
// either driver.
var commonAccess = []access{
	// Control cluster, in the manager's namespace.
	{verb: "watch", group: machineGroup, resource: "machines", namespace: namespace, allowed: true},
	{verb: "create", group: machineGroup, resource: "machines", namespace: namespace, allowed: true},
	{verb: "delete", group: machineGroup, resource: "machines", namespace: namespace, allowed: true},
	{verb: "patch", group: machineGroup, resource: "machines", subresource: "status", namespace: namespace, allowed: true},
	{verb: "create", group: machineGroup, resource: "machinesets", namespace: namespace, allowed: true},
	{verb: "watch", group: "machina.io", resource: "machinehealthchecks", namespace: namespace, allowed: true},
	{verb: "patch", group: "machina.io", resource: "machinehealthchecks", subresource: "status", namespace: namespace, allowed: true},
	{verb: "list", group: "machina.io", resource: "machinedrainrules", namespace: namespace, allowed: true},
	{verb: "watch", group: "machina.io", resource: "machinedrainrules", namespace: namespace, allowed: true},
	{verb: "update", group: machineGroup, resource: "machinedeployments", subresource: "status", namespace: namespace, allowed: true},
	{verb: "update", group: machineGroup, resource: "machineclasses", namespace: namespace, allowed: true},
	{verb: "update", group: "", resource: "secrets", namespace: namespace, allowed: true},
	{verb: "create", group: "", resource: "events", namespace: namespace, allowed: true},
	{verb: "create", group: "events.k8s.io", resource: "events", namespace: namespace, allowed: true},
	// events.k8s.io/v1 recorders patch an event's series when it repeats.
	{verb: "patch", group: "events.k8s.io", resource: "events", namespace: namespace, allowed: true},
	{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: namespace, allowed: true},
	{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: "machina-manager", allowed: true},
	{verb: "get", group: "", resource: "namespaces", namespace: namespace, name: namespace, allowed: true},
	// The metrics server's reviews of its callers (--metrics-secure).
	{verb: "create", group: "authentication.k8s.io", resource: "tokenreviews", allowed: true},
	{verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews", allowed: true},
	{verb: "get", group: "authentication.k8s.io", resource: "tokenreviews"},
	// Control cluster: what users own, other namespaces, other leases.
	{verb: "create", group: machineGroup, resource: "machineclasses", namespace: namespace},
	{verb: "delete", group: machineGroup, resource: "machineclasses", namespace: namespace},
	{verb: "create", group: machineGroup, resource: "machinedeployments", namespace: namespace},
	{verb: "delete", group: machineGroup, resource: "machinedeployments", namespace: namespace},
	{verb: "create", group: "machina.io", resource: "machinehealthchecks", namespace: namespace},
	{verb: "update", group: "machina.io", resource: "machinehealthchecks", namespace: namespace},
	{verb: "create", group: "machina.io", resource: "machinedrainrules", namespace: namespace},
	{verb: "update", group: "machina.io", resource: "machinedrainrules", namespace: namespace},
	{verb: "list", group: machineGroup, resource: "machines", namespace: other},
	{verb: "list", group: machineGroup, resource: "machines"},
	{verb: "create", group: "", resource: "secrets", namespace: namespace},
	{verb: "delete", group: "", resource: "secrets", namespace: namespace},
	{verb: "get", group: "", resource: "secrets", namespace: other},
	{verb: "list", group: "", resource: "secrets"},
	{verb: "update", group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: "someone-else"},
	{verb: "get", group: "", resource: "configmaps", namespace: namespace},
	{verb: "get", group: "", resource: "namespaces", namespace: other, name: other},
	{verb: "create", group: "apps", resource: "deployments", namespace: namespace},
	// Target cluster.
	// The labels of the pods' namespaces, for a MachineDrainRule's
	// namespaceSelector; list only, no get or watch.
	{verb: "list", group: "", resource: "namespaces", allowed: true},
	{verb: "watch", group: "", resource: "namespaces"},
	{verb: "watch", group: "", resource: "nodes", allowed: true},
	{verb: "patch", group: "", resource: "nodes", allowed: true},
	{verb: "delete", group: "", resource: "nodes", allowed: true},
	{verb: "list", group: "", resource: "pods", allowed: true},
	{verb: "delete", group: "", resource: "pods", namespace: "workloads", allowed: true},
	{verb: "create", group: "", resource: "pods", subresource: "eviction", namespace: "workloads", allowed: true},
	{verb: "get", group: "apps", resource: "daemonsets", namespace: "workloads", allowed: true},
	{verb: "list", group: "", resource: "persistentvolumes", allowed: true},
	{verb: "list", group: "", resource: "persistentvolumeclaims", allowed: true},
	{verb: "list", group: "policy", resource: "poddisruptionbudgets", allowed: true},
	{verb: "delete", group: "storage.k8s.io", resource: "volumeattachments", allowed: true},
	// Machine configuration: rendered and generated MachineConfigs, the
	// pools' target and status, KubeletConfigs' finalizer and status.
	{verb: "create", group: "machineconfiguration.openshift.io", resource: "machineconfigs", allowed: true},
	{verb: "delete", group: "machineconfiguration.openshift.io", resource: "machineconfigs", allowed: true},
	{verb: "patch", group: "machineconfiguration.openshift.io", resource: "machineconfigpools", allowed: true},
	{verb: "patch", group: "machineconfiguration.openshift.io", resource: "machineconfigpools", subresource: "status", allowed: true},
	{verb: "patch", group: "machineconfiguration.openshift.io", resource: "kubeletconfigs", subresource: "status", allowed: true},
	{verb: "delete", group: "machineconfiguration.openshift.io", resource: "machineconfigpools"},
	{verb: "create", group: "machineconfiguration.openshift.io", resource: "kubeletconfigs"},
	{verb: "create", group: "", resource: "events", namespace: "default", allowed: true},
	{verb: "create", group: "events.k8s.io", resource: "events", namespace: "default", allowed: true},
	{verb: "patch", group: "events.k8s.io", resource: "events", namespace: "default", allowed: true},
	{verb: "create", group: "", resource: "events", namespace: "workloads"},
	{verb: "watch", group: "", resource: "pods", namespace: "workloads"},
	{verb: "create", group: "", resource: "secrets", namespace: "kube-system", allowed: true},
	{verb: "delete", group: "", resource: "secrets", namespace: "kube-system", allowed: true},
	{verb: "update", group: "", resource: "secrets", namespace: "kube-system"},
	// Bootstrap tokens: created, deleted and read back by name; never
	// listed or watched (no copy of kube-system's Secrets). Admission
	// limits the writes to bootstrap tokens (admission_test.go).
	{verb: "get", group: "", resource: "secrets", namespace: "kube-system", name: "bootstrap-token-abcdef", allowed: true},
	{verb: "list", group: "", resource: "secrets", namespace: "kube-system"},
	{verb: "watch", group: "", resource: "secrets", namespace: "kube-system"},
	{verb: "patch", group: "", resource: "secrets", namespace: "kube-system"},
	{verb: "deletecollection", group: "", resource: "secrets", namespace: "kube-system"},
	{verb: "get", group: "", resource: "configmaps", namespace: "kube-system"},
	{verb: "create", group: "", resource: "serviceaccounts", subresource: "token", namespace: "kube-system"},
	{verb: "create", group: "", resource: "secrets", namespace: other},
	{verb: "update", group: "", resource: "secrets", namespace: other},
	{verb: "deletecollection", group: "", resource: "secrets", namespace: namespace},
	{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: namespace, name: "machina-manager"},
	{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: other},
	{verb: "impersonate", group: "", resource: "serviceaccounts", namespace: namespace},
	{verb: "create", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicybindings"},
	{verb: "delete", group: "admissionregistration.k8s.io", resource: "validatingadmissionpolicies", name: "machina-manager-bootstrap-tokens"},
	{verb: "get", group: "", resource: "secrets", namespace: "kube-public"},
	{verb: "create", group: "", resource: "pods", namespace: "workloads"},
	{verb: "update", group: "", resource: "pods", namespace: "workloads"},
	{verb: "update", group: "", resource: "nodes", subresource: "status"},
	// The InPlaceUpdate node condition is the core's (in-place updates).
	{verb: "patch", group: "", resource: "nodes", subresource: "status", allowed: true},
	{verb: "delete", group: "", resource: "persistentvolumes"},
	{verb: "delete", group: "", resource: "namespaces"},
	{verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings"},
	{verb: "create", group: "apiextensions.k8s.io", resource: "customresourcedefinitions"},
}

// managerOnlyAccess holds for a driver that does not touch Kubernetes
// (inmemory): the manager never creates Nodes or writes Leases of nodes.
var managerOnlyAccess = []access{
	{verb: "create", group: "", resource: "nodes"},
	{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease"},
}

// virtualnodeAccess is what the virtualnode driver sidecar adds: it
// registers Nodes, keeps their conditions and renews their Leases.
var virtualnodeAccess = []access{
	{verb: "create", group: "", resource: "nodes", allowed: true},
	{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", allowed: true},
	{verb: "patch", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", allowed: true},
	{verb: "delete", group: "coordination.k8s.io", resource: "leases", namespace: "kube-node-lease", allowed: true},
	{verb: "update", group: "", resource: "nodes", subresource: "status"},
	{verb: "create", group: "coordination.k8s.io", resource: "leases", namespace: other},
}

// checkAccess asks the API server's authorizer each question about the
// manager's ServiceAccount (a SubjectAccessReview, as `kubectl auth can-i
// --as` does).
func checkAccess(t *testing.T, c client.Client, cases []access) {
	for _, a := range cases {
		review := &authorizationv1.SubjectAccessReview{Spec: serviceAccountUser}
		review.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
			Namespace: a.namespace, Name: a.name,
		}
		require.NoError(t, c.Create(t.Context(), review), a.String())
		assert.Equal(t, a.allowed, review.Status.Allowed, "%s: allowed=%v (%s)", a, review.Status.Allowed, review.Status.Reason)
	}
}
