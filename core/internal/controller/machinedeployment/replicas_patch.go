package machinedeployment

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// replicasTestPatch is a JSON patch from before to after of a machine set's
// replicas and annotations that the API server applies only while the
// set's spec.replicas is still before's (an RFC 6902 "test"): a lock on
// the one field the decision read, where a resourceVersion lock would also
// fail on every status write.
func replicasTestPatch(before, after *v1alpha1.MachineSet) client.Patch {
	ops := []jsonPatchOp{
		{Op: "test", Path: "/spec/replicas", Value: before.Spec.Replicas},
		{Op: "replace", Path: "/spec/replicas", Value: after.Spec.Replicas},
	}
	if before.Annotations == nil {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations", Value: after.Annotations})
	} else {
		for _, k := range slices.Sorted(maps.Keys(after.Annotations)) {
			if v, ok := before.Annotations[k]; !ok || v != after.Annotations[k] {
				// "add" sets an object's member whether it exists or not.
				ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(k), Value: after.Annotations[k]})
			}
		}
	}
	data, _ := json.Marshal(ops) // strings and numbers only: cannot fail
	return client.RawPatch(types.JSONPatchType, data)
}

type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}
