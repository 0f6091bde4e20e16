package manifests_test

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/core/testenv"
)

const (
	namespace      = "machina-system"
	deploymentName = "machina-manager"
	socketVolume   = "driver-socket"
	socketDir      = "/var/run/machina"
	endpoint       = "unix:///var/run/machina/driver.sock"
)

// TestOverlaysOnAPIServer applies each overlay, CRDs included, to a fresh
// kube-apiserver with server-side apply and checks what the API server
// stored: the pod of the manager and its driver sidecar, that the pod is
// admitted under the "restricted" Pod Security Standard, and what the
// ServiceAccount may and may not do according to the API server's own RBAC
// authorizer.
func TestOverlaysOnAPIServer(t *testing.T) {
	for _, name := range overlays {
		t.Run(name, func(t *testing.T) {
			objs := render(t, "deploy/overlays/"+name)
			env := testenv.Start(t, testenv.WithoutCRDs())
			ctx := t.Context()
			require.NoError(t, manifests.Apply(ctx, env.Client, objs, manifests.FieldOwner))

			for _, o := range objs {
				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(o.GroupVersionKind())
				require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(o), got), "%s must be stored", manifests.Describe(o))
				assert.Contains(t, got.GetManagedFields()[0].Manager, manifests.FieldOwner)
			}

			dep := &appsv1.Deployment{}
			require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: deploymentName}, dep))
			checkPod(t, dep)
			checkMetricsService(t, env.Client, dep)
			checkRestrictedAdmission(t, env.Client, dep)

			checkRulesLeastPrivilege(t, env, objs)
			checkAccess(t, env.Client, commonAccess)
			if name == "virtualnode" {
				checkAccess(t, env.Client, virtualnodeAccess)
			} else {
				checkAccess(t, env.Client, managerOnlyAccess)
			}
			checkManagerAdmission(t, env, name == "virtualnode")
		})
	}
}

// sidecarAndMain returns the pod's long-running containers: native sidecars
// (init containers with restartPolicy Always) and regular containers.
func sidecarAndMain(spec *corev1.PodSpec) []corev1.Container {
	var out []corev1.Container
	for _, c := range spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return append(out, spec.Containers...)
}

func checkPod(t *testing.T, dep *appsv1.Deployment) {
	spec := &dep.Spec.Template.Spec
	containers := sidecarAndMain(spec)
	require.Len(t, containers, 2, "the pod runs the manager and the driver, nothing else")
	assert.Len(t, spec.InitContainers, 1, "the only init container is the driver sidecar")
	assert.Equal(t, "driver", spec.InitContainers[0].Name)
	require.Len(t, spec.Containers, 1)
	assert.Equal(t, "manager", spec.Containers[0].Name)
	assert.Equal(t, deploymentName, spec.ServiceAccountName)

	// Pod level: non-root, one user for both containers (the socket is
	// owner-only), the runtime's default seccomp profile.
	psc := spec.SecurityContext
	require.NotNil(t, psc)
	require.NotNil(t, psc.RunAsNonRoot)
	assert.True(t, *psc.RunAsNonRoot)
	require.NotNil(t, psc.RunAsUser)
	assert.NotZero(t, *psc.RunAsUser)
	require.NotNil(t, psc.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)

	var socket *corev1.Volume
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == socketVolume {
			socket = &spec.Volumes[i]
		}
	}
	require.NotNil(t, socket, "volume %s", socketVolume)
	assert.NotNil(t, socket.EmptyDir, "the socket volume is an emptyDir: it lives and dies with the pod")

	for _, c := range containers {
		t.Run(c.Name, func(t *testing.T) {
			sc := c.SecurityContext
			require.NotNil(t, sc)
			require.NotNil(t, sc.AllowPrivilegeEscalation)
			assert.False(t, *sc.AllowPrivilegeEscalation)
			require.NotNil(t, sc.ReadOnlyRootFilesystem)
			assert.True(t, *sc.ReadOnlyRootFilesystem)
			require.NotNil(t, sc.Capabilities)
			assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
			assert.Empty(t, sc.Capabilities.Add)
			assert.Nil(t, sc.Privileged)
			assert.Nil(t, sc.RunAsUser, "a per-container user would break the shared owner-only socket")
			if sc.RunAsNonRoot != nil {
				assert.True(t, *sc.RunAsNonRoot)
			}
			if sc.SeccompProfile != nil {
				assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, sc.SeccompProfile.Type)
			}

			for _, res := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, lim := c.Resources.Requests[res], c.Resources.Limits[res]
				assert.False(t, req.IsZero(), "%s request", res)
				assert.False(t, lim.IsZero(), "%s limit", res)
				assert.LessOrEqual(t, req.Cmp(lim), 0, "%s request must not exceed its limit", res)
			}

			assert.Contains(t, c.Env, corev1.EnvVar{Name: "MACHINA_DRIVER_ENDPOINT", Value: endpoint})
			assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: socketVolume, MountPath: socketDir},
				"the socket directory is the shared emptyDir, writable")
			assert.False(t, strings.HasPrefix(c.Image, "machina-driver:"), "placeholder image %s", c.Image)
		})
	}

	manager := spec.Containers[0]
	args := flagValues(manager.Args)
	assert.Equal(t, "true", args["leader-elect"])
	if ep, ok := args["driver-endpoint"]; ok {
		assert.Equal(t, endpoint, ep)
	}
	healthPort := bindPort(t, args["health-probe-bind-address"])
	metricsPort := bindPort(t, args["metrics-bind-address"])
	assert.Equal(t, healthPort, containerPort(t, manager, "health"), "the health port is where the manager serves probes")
	assert.Equal(t, metricsPort, containerPort(t, manager, "metrics"), "the metrics port is where the manager serves metrics")

	for probe, path := range map[*corev1.Probe]string{manager.LivenessProbe: "/healthz", manager.ReadinessProbe: "/readyz"} {
		require.NotNil(t, probe, path)
		require.NotNil(t, probe.HTTPGet, path)
		assert.Equal(t, path, probe.HTTPGet.Path)
		assert.Equal(t, healthPort, resolvePort(t, manager, probe.HTTPGet.Port), path)
	}
}

// flagValues maps "--name=value" arguments to name → value.
func flagValues(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if ok {
			out[name] = value
		}
	}
	return out
}

func bindPort(t *testing.T, addr string) int32 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err, "bind address %q", addr)
	n, err := strconv.ParseInt(port, 10, 32)
	require.NoError(t, err)
	require.NotZero(t, n, "bind address %q must name a fixed port", addr)
	return int32(n)
}

func containerPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	require.Failf(t, "missing port", "container %s has no port named %s", c.Name, name)
	return 0
}

func resolvePort(t *testing.T, c corev1.Container, p intstr.IntOrString) int32 {
	t.Helper()
	if p.Type == intstr.String {
		return containerPort(t, c, p.StrVal)
	}
	return p.IntVal
}

func checkMetricsService(t *testing.T, c client.Client, dep *appsv1.Deployment) {
	svc := &corev1.Service{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: namespace, Name: "machina-manager-metrics"}, svc))
	for k, v := range svc.Spec.Selector {
		assert.Equal(t, v, dep.Spec.Template.Labels[k], "the Service selects the manager's pod by %s", k)
	}
	require.NotEmpty(t, svc.Spec.Selector)
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, containerPort(t, dep.Spec.Template.Spec.Containers[0], "metrics"),
		resolvePort(t, dep.Spec.Template.Spec.Containers[0], svc.Spec.Ports[0].TargetPort))
}

// checkRestrictedAdmission creates (dry run) a Pod from the Deployment's
// template in the namespace, which enforces the "restricted" Pod Security
// Standard: the API server's PodSecurity admission rejects any pod that
// breaks it.
func checkRestrictedAdmission(t *testing.T, c client.Client, dep *appsv1.Deployment) {
	ns := &corev1.Namespace{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Name: namespace}, ns))
	require.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"])

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "admission-check", Labels: dep.Spec.Template.Labels},
		Spec:       *dep.Spec.Template.Spec.DeepCopy(),
	}
	require.NoError(t, c.Create(t.Context(), pod, client.DryRunAll), "the pod must pass the restricted Pod Security Standard")

	// The check can fail: the same pod with a privilege escalation is
	// refused.
	bad := pod.DeepCopy()
	bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = new(true)
	err := c.Create(t.Context(), bad, client.DryRunAll)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "allowPrivilegeEscalation")
}
