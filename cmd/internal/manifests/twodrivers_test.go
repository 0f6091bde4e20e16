package manifests_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestTwoDriversOverlay: the pod of deploy/overlays/two-drivers runs two
// driver sidecars, each serving its own socket in the shared volume, and
// the manager names both.
func TestTwoDriversOverlay(t *testing.T) {
	var dep *appsv1.Deployment
	for _, o := range render(t, "deploy/overlays/two-drivers") {
		if o.GetKind() == "Deployment" && o.GetName() == deploymentName {
			dep = &appsv1.Deployment{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dep))
		}
	}
	require.NotNil(t, dep, "no Deployment %s", deploymentName)

	sockets := map[string]string{} // sidecar -> endpoint
	images := map[string]string{}
	for _, c := range sidecarAndMain(&dep.Spec.Template.Spec) {
		if c.Name == "manager" {
			assert.Contains(t, c.Args, "--driver-endpoint=virtualnode=unix:///var/run/machina/driver.sock")
			assert.Contains(t, c.Args, "--driver-endpoint=inmemory=unix:///var/run/machina/inmemory.sock")
			continue
		}
		for _, e := range c.Env {
			if e.Name == "MACHINA_DRIVER_ENDPOINT" {
				sockets[c.Name] = e.Value
			}
		}
		images[c.Name] = c.Image
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || (m.Name == socketVolume && m.MountPath == socketDir)
		}
		assert.True(t, mounted, "sidecar %s mounts the socket volume at %s", c.Name, socketDir)
	}
	assert.Equal(t, map[string]string{
		"driver":          "unix:///var/run/machina/driver.sock",
		"driver-inmemory": "unix:///var/run/machina/inmemory.sock",
	}, sockets)
	assert.Equal(t, "ghcr.io/machina-io/machina-driver-virtualnode:v0.1.0", images["driver"])
	assert.Equal(t, "ghcr.io/machina-io/machina-driver-inmemory:v0.1.0", images["driver-inmemory"])
}
