package manifests_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/core/testenv"
)

const (
	agentNamespace = "machina-node-agent"
	agentName      = "machina-node-agent"
)

// agentUser is how the API server sees the agent's ServiceAccount.
var agentUser = authorizationv1.SubjectAccessReviewSpec{
	User:   "system:serviceaccount:" + agentNamespace + ":" + agentName,
	Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + agentNamespace, "system:authenticated"},
}

// agentAccess is what the agent may and may not do: read Nodes and patch
// their metadata, ask the manager for its configuration, nothing else.
var agentAccess = []access{
	{verb: "get", resource: "nodes", name: "node-1", allowed: true},
	{verb: "list", resource: "nodes", allowed: true},
	{verb: "watch", resource: "nodes", allowed: true},
	{verb: "patch", resource: "nodes", name: "node-1", allowed: true},
	{verb: "update", resource: "nodes", name: "node-1"},
	{verb: "create", resource: "nodes"},
	{verb: "delete", resource: "nodes", name: "node-1"},
	{verb: "patch", resource: "nodes", subresource: "status", name: "node-1"},
	{verb: "update", resource: "nodes", subresource: "status", name: "node-1"},
	{verb: "list", resource: "pods"},
	{verb: "delete", resource: "pods", namespace: "workloads"},
	{verb: "create", resource: "pods", subresource: "eviction", namespace: "workloads"},
	{verb: "get", resource: "secrets", namespace: agentNamespace},
	{verb: "create", resource: "events", namespace: agentNamespace},
	{verb: "list", group: machineGroup, resource: "machines", namespace: "machina-system"},
	// The MachineConfig handshake: no MachineConfig or pool from the API
	// server; the manager's node configuration server asks about the
	// virtual subresource, and the agent trusts its certificates.
	{verb: "get", group: "machineconfiguration.openshift.io", resource: "machineconfigs", name: "rendered-worker-1"},
	{verb: "list", group: "machineconfiguration.openshift.io", resource: "machineconfigs"},
	{verb: "update", group: "machineconfiguration.openshift.io", resource: "machineconfigs", name: "rendered-worker-1"},
	{verb: "get", group: "machineconfiguration.openshift.io", resource: "machineconfigpools", name: "worker"},
	{verb: "list", group: "machineconfiguration.openshift.io", resource: "machineconfigpools"},
	{verb: "patch", group: "machineconfiguration.openshift.io", resource: "machineconfigpools", name: "worker"},
	{verb: "get", group: "machineconfiguration.openshift.io", resource: "machineconfigs", subresource: "node-config", name: "rendered-worker-1", allowed: true},
	{verb: "get", group: "machineconfiguration.openshift.io", resource: "machineconfigpools", subresource: "node-config", name: "worker", allowed: true},
	{verb: "update", group: "machineconfiguration.openshift.io", resource: "machineconfigs", subresource: "node-config", name: "rendered-worker-1"},
	{verb: "get", resource: "configmaps", namespace: agentNamespace, name: "machina-node-config-ca", allowed: true},
	{verb: "get", resource: "configmaps", namespace: agentNamespace, name: "kube-root-ca.crt"},
	{verb: "update", resource: "configmaps", namespace: agentNamespace, name: "machina-node-config-ca"},
	{verb: "list", resource: "configmaps", namespace: agentNamespace},
}

// managerInAgentNamespace is what deploy/node-agent lets the manager do:
// publish its node configuration server's certificates in one ConfigMap.
var managerInAgentNamespace = []access{
	{verb: "create", resource: "configmaps", namespace: agentNamespace, allowed: true},
	{verb: "get", resource: "configmaps", namespace: agentNamespace, name: "machina-node-config-ca", allowed: true},
	{verb: "update", resource: "configmaps", namespace: agentNamespace, name: "machina-node-config-ca", allowed: true},
	{verb: "update", resource: "configmaps", namespace: agentNamespace, name: "kube-root-ca.crt"},
	{verb: "delete", resource: "configmaps", namespace: agentNamespace, name: "machina-node-config-ca"},
	{verb: "list", resource: "configmaps", namespace: agentNamespace},
	{verb: "get", resource: "secrets", namespace: agentNamespace},
}

// TestNodeAgentOnAPIServer applies deploy/node-agent to a fresh
// kube-apiserver and checks the DaemonSet (its Node from the downward API,
// its host directories, its tolerations), that its pod is admitted in its
// namespace and would not be in machina-system's, and, with the API
// server's RBAC authorizer, that the agent may read Nodes and patch their
// metadata and nothing else.
func TestNodeAgentOnAPIServer(t *testing.T) {
	objs := render(t, "deploy/node-agent")
	env := testenv.Start(t, testenv.WithoutCRDs())
	ctx := t.Context()
	require.NoError(t, manifests.Apply(ctx, env.Client, objs, manifests.FieldOwner))
	for _, o := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(o), got), "%s must be stored", manifests.Describe(o))
	}

	ds := &appsv1.DaemonSet{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: agentNamespace, Name: agentName}, ds))
	spec := &ds.Spec.Template.Spec
	assert.Equal(t, agentName, spec.ServiceAccountName)
	assert.Contains(t, spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists},
		"the agent runs on every node, tainted or cordoned")
	require.Len(t, spec.Containers, 1)
	agent := spec.Containers[0]
	tag := agent.Image[strings.LastIndex(agent.Image, ":")+1:]
	assert.True(t, strings.HasPrefix(agent.Image, "ghcr.io/machina-io/machina-node-agent:"), agent.Image)
	assert.NotContains(t, []string{"", "latest"}, tag, "image %s needs a fixed tag", agent.Image)

	var nodeName *corev1.EnvVar
	for i := range agent.Env {
		if agent.Env[i].Name == "NODE_NAME" {
			nodeName = &agent.Env[i]
		}
	}
	require.NotNil(t, nodeName, "NODE_NAME")
	require.NotNil(t, nodeName.ValueFrom)
	require.NotNil(t, nodeName.ValueFrom.FieldRef)
	assert.Equal(t, "spec.nodeName", nodeName.ValueFrom.FieldRef.FieldPath, "the Node comes from the downward API")

	args := flagValues(agent.Args)
	assert.Equal(t, "$(NODE_NAME)", args["node-name"])
	// Each directory flag names the mount of a hostPath volume; the root is
	// the host's own root, and systemd the host's: the agent starts the
	// host's programs inside it with chroot(2) (--chroot), as its image
	// holds nothing but the agent (TestNodeAgentImage's "no shell").
	for flagName, volume := range map[string]string{"root": "host", "source-dir": "targets", "state-dir": "state"} {
		i := slices.IndexFunc(agent.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == volume })
		require.GreaterOrEqual(t, i, 0, "mount of %s", volume)
		assert.Equal(t, agent.VolumeMounts[i].MountPath, args[flagName], "--%s is the %s mount", flagName, volume)
		assert.Equal(t, volume == "targets", agent.VolumeMounts[i].ReadOnly, "only the sources are read-only: %s", volume)
		j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == volume })
		require.GreaterOrEqual(t, j, 0, "volume %s", volume)
		require.NotNil(t, spec.Volumes[j].HostPath, "volume %s is a host directory", volume)
		if volume == "host" {
			assert.Equal(t, "/", spec.Volumes[j].HostPath.Path, "--root is the host's /, not a directory of it")
		}
	}
	assert.True(t, slices.Contains(agent.Args, "--chroot"), "systemctl and shells are the host's, run inside --root: %v", agent.Args)
	for _, flagName := range []string{"systemctl", "apply-command", "os-update-command"} {
		if v, ok := args[flagName]; ok {
			assert.NotRegexp(t, `^(chroot|nsenter)\b`, v, "--%s names a program the image does not hold", flagName)
		}
	}
	healthPort := bindPort(t, args["health-probe-bind-address"])
	for probe, path := range map[*corev1.Probe]string{agent.LivenessProbe: "/healthz", agent.ReadinessProbe: "/readyz"} {
		require.NotNil(t, probe, path)
		require.NotNil(t, probe.HTTPGet, path)
		assert.Equal(t, path, probe.HTTPGet.Path)
		assert.Equal(t, healthPort, resolvePort(t, agent, probe.HTTPGet.Port), path)
	}
	sc := agent.SecurityContext
	require.NotNil(t, sc)
	require.NotNil(t, sc.AllowPrivilegeEscalation)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	require.NotNil(t, sc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.ElementsMatch(t, []corev1.Capability{"CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "SYS_CHROOT"}, sc.Capabilities.Add,
		"file owners and modes on the host, and chroot for systemctl: nothing more")
	assert.Nil(t, sc.Privileged)
	assert.False(t, spec.HostPID || spec.HostNetwork || spec.HostIPC, "no host namespace")

	// Admitted in its own namespace; machina-system's restricted standard
	// refuses host directories, which is why the agent has a namespace of
	// its own.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: agentNamespace, Name: "admission-check", Labels: ds.Spec.Template.Labels},
		Spec:       *spec.DeepCopy(),
	}
	pod.Spec.NodeName = "node-1"
	require.NoError(t, env.Client.Create(ctx, pod, client.DryRunAll))
	restricted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restricted-check",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	require.NoError(t, env.Client.Create(ctx, restricted))
	pod = pod.DeepCopy()
	pod.Namespace = restricted.Name
	err := env.Client.Create(ctx, pod, client.DryRunAll)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "hostPath")

	// The bindings name the agent's ServiceAccount only, but for the one
	// that lets the manager publish its certificates for the agents.
	for _, o := range manifests.OfKinds(objs, "ClusterRoleBinding", "RoleBinding") {
		subjects, _, err := unstructured.NestedSlice(o.Object, "subjects")
		require.NoError(t, err)
		want := map[string]any{"kind": "ServiceAccount", "name": agentName, "namespace": agentNamespace}
		if o.GetName() == "machina-manager-node-config-ca" {
			want = map[string]any{"kind": "ServiceAccount", "name": deploymentName, "namespace": namespace}
		}
		assert.Equal(t, []any{want}, subjects, "%s binds only %s", manifests.Describe(o), want["name"])
	}
	checkAccess(t, env.Client, managerInAgentNamespace)
	for _, a := range agentAccess {
		review := &authorizationv1.SubjectAccessReview{Spec: agentUser}
		review.Spec.ResourceAttributes = &authorizationv1.ResourceAttributes{
			Verb: a.verb, Group: a.group, Resource: a.resource, Subresource: a.subresource,
			Namespace: a.namespace, Name: a.name,
		}
		require.NoError(t, env.Client.Create(ctx, review), a.String())
		assert.Equal(t, a.allowed, review.Status.Allowed, "agent: %s: allowed=%v (%s)", a, review.Status.Allowed, review.Status.Reason)
	}
}
