package manifests_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/machina-io/machina/cmd/internal/manifests"
)

// repoDir returns a directory of the repository, given relative to its root.
func repoDir(t *testing.T, rel string) string {
	t.Helper()
	root, err := manifests.RepoRoot(".")
	require.NoError(t, err)
	return filepath.Join(root, rel)
}

// overlays are the deployable kustomizations, by driver.
var overlays = []string{"inmemory", "virtualnode"}

func render(t *testing.T, rel string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := manifests.Render(repoDir(t, rel))
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	return objs
}

func TestRenderNamesEveryObjectOnce(t *testing.T) {
	for _, rel := range []string{"deploy/base", "deploy/overlays/inmemory", "deploy/overlays/virtualnode", "deploy/overlays/two-drivers", "deploy/overlays/autoscaler", "deploy/monitoring", "deploy/examples", "deploy/node-agent"} {
		t.Run(rel, func(t *testing.T) {
			seen := map[string]bool{}
			for _, o := range render(t, rel) {
				id := o.GetAPIVersion() + " " + manifests.Describe(o)
				assert.False(t, seen[id], "%s appears twice", id)
				seen[id] = true
				assert.NotEmpty(t, o.GetName(), "%s has no name", id)
			}
		})
	}
}

// TestOverlayImages checks that each overlay replaces the base's placeholder
// driver image by its driver's image, and that every image has a fixed tag.
func TestOverlayImages(t *testing.T) {
	images := func(objs []*unstructured.Unstructured) map[string]string {
		dep := findObject(t, objs, "Deployment", "machina-system", "machina-manager")
		out := map[string]string{}
		for _, field := range []string{"initContainers", "containers"} {
			list, _, err := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", field)
			require.NoError(t, err)
			for _, c := range list {
				m := c.(map[string]any)
				out[m["name"].(string)] = m["image"].(string)
			}
		}
		return out
	}

	base := images(render(t, "deploy/base"))
	assert.Equal(t, "machina-driver:set-by-overlay", base["driver"], "the base leaves the driver image to an overlay")

	for _, name := range overlays {
		t.Run(name, func(t *testing.T) {
			got := images(render(t, "deploy/overlays/"+name))
			require.Len(t, got, 2)
			assert.True(t, strings.HasPrefix(got["driver"], "ghcr.io/machina-io/machina-driver-"+name+":"), got["driver"])
			assert.True(t, strings.HasPrefix(got["manager"], "ghcr.io/machina-io/machina-manager:"), got["manager"])
			for c, image := range got {
				tag := image[strings.LastIndex(image, ":")+1:]
				assert.NotContains(t, []string{"", "latest"}, tag, "container %s: image %s needs a fixed tag", c, image)
			}
		})
	}
}

func findObject(t *testing.T, objs []*unstructured.Unstructured, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == namespace && o.GetName() == name {
			return o
		}
	}
	require.Failf(t, "object missing", "no %s %s/%s in the rendered manifests", kind, namespace, name)
	return nil
}
