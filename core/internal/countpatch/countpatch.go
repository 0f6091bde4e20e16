// Package countpatch builds status merge patches that always carry a
// resource's counts.
//
// A JSON merge patch computed from two Go objects leaves out what did not
// change and turns a count that dropped to 0 into null (the fields are
// omitempty), so a count of 0 is never stored, and `kubectl get` shows a
// blank in the printer column that reads it. The patch built here sets
// every named count explicitly, 0 included.
package countpatch

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Status is a merge patch (with the resource version of orig, an optimistic
// lock) from orig to updated whose status carries every count of counts
// (JSON field name to value).
func Status(orig, updated client.Object, counts map[string]int32) (client.Patch, error) {
	data, err := client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}).Data(updated)
	if err != nil {
		return nil, fmt.Errorf("computing the status patch: %w", err)
	}
	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, fmt.Errorf("computing the status patch: %w", err)
	}
	status, _ := patch["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		patch["status"] = status
	}
	for k, v := range counts {
		status[k] = v
	}
	if data, err = json.Marshal(patch); err != nil {
		return nil, fmt.Errorf("computing the status patch: %w", err)
	}
	return client.RawPatch(types.MergePatchType, data), nil
}
