package manifests_test

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/machina-io/machina/cmd/internal/images"
)

// deployables are the kustomizations a user applies that run containers.
var deployables = []string{"deploy/overlays/inmemory", "deploy/overlays/virtualnode", "deploy/node-agent"}

// TestManifestsReferenceTheBuiltImages checks that every container of
// deploy/ runs an image `make images` writes, by the exact name and tag
// the build gives it, and that every image the build writes is used: a
// renamed binary or a bumped tag on one side only fails here.
func TestManifestsReferenceTheBuiltImages(t *testing.T) {
	built := map[string]bool{}
	for _, img := range images.List {
		built[img.Ref()] = true
	}
	used := map[string]bool{}
	for _, rel := range deployables {
		for _, o := range render(t, rel) {
			for container, image := range containerImages(t, o) {
				used[image] = true
				assert.True(t, built[image], "%s: %s container %s runs image %s, which make images does not build (it builds %v)",
					rel, o.GetKind()+" "+o.GetName(), container, image, sortedKeys(built))
			}
		}
	}
	for ref := range built {
		assert.True(t, used[ref], "make images builds %s, but no manifest of %v runs it", ref, deployables)
	}
}

// containerImages returns the images of a workload's pod template (or
// nothing for another kind), by container name.
func containerImages(t *testing.T, o *unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, field := range []string{"initContainers", "containers"} {
		list, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", field)
		require.NoError(t, err)
		for _, c := range list {
			m := c.(map[string]any)
			out[m["name"].(string)] = m["image"].(string)
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
