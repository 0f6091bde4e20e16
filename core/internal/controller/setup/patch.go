package setup

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patcher writes what a reconcile changed in the object it reconciles, once,
// at the end: it keeps a copy of the object as read, and Patch compares the
// object with it and sends at most two merge patches (JSON merge patches,
// or strategic ones for built-in kinds: Strategic), one for the
// metadata and spec and one for the status subresource, each only if that
// part changed. Merge patches name only the fields that changed, so a field
// another writer set meanwhile is kept; lists (finalizers, conditions) are
// replaced whole, which is why a part whose list another writer may change
// is written with the object's resourceVersion (LockObject, LockStatus).
// Nothing changed, nothing is written.
//
// The idea is Cluster API's util/patch helper, cut down to what machina's
// controllers need: no condition merging (a conflict is retried by the
// reconcile, RequeueOnConflict) and no field owners.
type Patcher struct {
	c          client.Client
	before     client.Object
	lockObject bool
	lockStatus bool
	counts     []string
	strategic  bool
}

// PatchOption changes how a Patcher writes.
type PatchOption func(*Patcher)

// LockObject makes the metadata and spec patch carry the resourceVersion the
// object was read at: a change meanwhile (another writer's label or
// finalizer) fails the write with a conflict instead of being overwritten.
func LockObject() PatchOption { return func(p *Patcher) { p.lockObject = true } }

// LockStatus does the same for the status patch, for a status whose lists
// (conditions) another writer may change. When a Patch writes both parts,
// the metadata and spec patch is then locked too (see Patch).
func LockStatus() PatchOption { return func(p *Patcher) { p.lockStatus = true } }

// Strategic makes the patches strategic merge patches, for built-in kinds
// (a Node): a finalizer or taint added is merged into the list another
// writer (the kubelet) may change meanwhile, rather than replacing it, so no
// resourceVersion is needed.
func Strategic() PatchOption { return func(p *Patcher) { p.strategic = true } }

// StatusCounts names status fields (JSON names) that every status patch
// carries, 0 included. A merge patch computed from Go objects turns a count
// that dropped to 0 into null (the fields are omitempty), so 0 would never
// be stored and `kubectl get` would show a blank in the column that reads it.
func StatusCounts(fields ...string) PatchOption {
	return func(p *Patcher) { p.counts = append(p.counts, fields...) }
}

// NewPatcher starts a Patcher from obj as read at the start of a reconcile.
// The reconcile then changes obj in place and hands it to Patch.
func NewPatcher(c client.Client, obj client.Object, opts ...PatchOption) *Patcher {
	p := &Patcher{c: c, before: obj.DeepCopyObject().(client.Object)}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Patch writes what changed in obj since the Patcher's copy: metadata and
// spec first, then status. obj ends up as the API server answered (with the
// new resourceVersion), and becomes the copy the next Patch compares with.
// After a failed write obj may hold the answer to the metadata write, without
// the status computed: the reconcile is retried from a fresh read.
func (p *Patcher) Patch(ctx context.Context, obj client.Object) error {
	objectPatch, statusPatch, err := p.diff(obj)
	if err != nil {
		return err
	}
	if objectPatch != nil {
		// A locked status is then written at the version this write
		// answers with, which stands for "what was read" only if this
		// write was locked too: otherwise a status another writer stored
		// in between would pass as seen, and its lists be replaced.
		if p.lockObject || (p.lockStatus && statusPatch != nil) {
			objectPatch["metadata"] = withVersion(objectPatch["metadata"], obj.GetResourceVersion())
		}
		data, err := json.Marshal(objectPatch)
		if err != nil {
			return fmt.Errorf("encoding patch: %w", err)
		}
		if err := p.c.Patch(ctx, obj, client.RawPatch(p.patchType(), data)); err != nil {
			return err
		}
	}
	if statusPatch != nil {
		if p.lockStatus {
			// After a metadata write obj holds its new version, the one
			// this status is computed against.
			statusPatch["metadata"] = withVersion(nil, obj.GetResourceVersion())
		}
		data, err := json.Marshal(statusPatch)
		if err != nil {
			return fmt.Errorf("encoding status patch: %w", err)
		}
		if err := p.c.Status().Patch(ctx, obj, client.RawPatch(p.patchType(), data)); err != nil {
			return err
		}
	}
	p.before = obj.DeepCopyObject().(client.Object)
	return nil
}

// diff returns the merge patches from the copy to obj, metadata and spec
// apart from status; nil for a part that did not change. The patch of the
// status part is computed before any write, as a write answers with the
// stored (old) status.
//
// One patch of the whole object is computed and split at its status key:
// a merge patch (and a strategic one: its directives sit next to the lists
// they order) of an object is the patch of its status under "status" and
// the patch of the rest beside it. The fields the API server keeps
// (resourceVersion, managedFields) are dropped from it: a write elsewhere
// in the reconcile (a finalizer) moves them without anything left to
// write. Every writing reconcile pays for this, so it marshals each object
// once (BenchmarkPatcherDiff).
func (p *Patcher) diff(obj client.Object) (object, status map[string]any, err error) {
	base := client.MergeFrom(p.before)
	if p.strategic {
		base = client.StrategicMergeFrom(p.before)
	}
	data, err := base.Data(obj)
	if err != nil {
		return nil, nil, fmt.Errorf("computing patch: %w", err)
	}
	var patch map[string]any
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, nil, fmt.Errorf("decoding patch: %w", err)
	}
	if st, changed := patch["status"]; changed {
		status = map[string]any{"status": st}
		delete(patch, "status")
	}
	if md, ok := patch["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion")
		delete(md, "managedFields")
		if len(md) == 0 {
			delete(patch, "metadata")
		}
	}
	if len(patch) > 0 {
		object = patch
	}
	if status != nil && len(p.counts) > 0 {
		if err := p.addCounts(status, obj); err != nil {
			return nil, nil, err
		}
	}
	return object, status, nil
}

// addCounts sets the StatusCounts fields in a status patch to obj's values.
func (p *Patcher) addCounts(status map[string]any, obj client.Object) error {
	after, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("converting %T: %w", obj, err)
	}
	st, _ := status["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		status["status"] = st
	}
	for _, f := range p.counts {
		v, _, _ := unstructured.NestedFieldNoCopy(after, "status", f)
		if v == nil {
			v = int64(0)
		}
		st[f] = v
	}
	return nil
}

// patchType is the content type of the patches sent.
func (p *Patcher) patchType() types.PatchType {
	if p.strategic {
		return types.StrategicMergePatchType
	}
	return types.MergePatchType
}

// withVersion adds resourceVersion to a patch's metadata (nil for none).
func withVersion(metadata any, version string) map[string]any {
	m, _ := metadata.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	m["resourceVersion"] = version
	return m
}

// ConflictRetry is how soon a reconcile whose write lost an optimistic-lock
// race runs again (MCM's ConflictRetry).
const ConflictRetry = 200 * time.Millisecond

// RequeueOnConflict is every controller's conflict policy, wrapped around
// its reconcile: a conflict means the object changed since the cache copy
// the reconcile started from, so nothing was written and nothing failed. The
// reconcile runs again soon, from the newer copy (whose event usually
// arrives first), without an error log, a failure count or a growing
// backoff. Any other result passes through, and so does an error that
// joins a conflict with another failure: that one must not be hidden.
func RequeueOnConflict(res ctrl.Result, err error) (ctrl.Result, error) {
	if err != nil && onlyConflicts(err) {
		return ctrl.Result{RequeueAfter: ConflictRetry}, nil
	}
	return res, err
}

// onlyConflicts reports whether err is a conflict, or wraps or joins
// (errors.Join, fmt.Errorf with several %w) only conflicts.
func onlyConflicts(err error) bool {
	switch e := err.(type) {
	case apierrors.APIStatus:
		return apierrors.IsConflict(err)
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			if inner != nil && !onlyConflicts(inner) {
				return false
			}
		}
		return true
	case interface{ Unwrap() error }:
		return e.Unwrap() != nil && onlyConflicts(e.Unwrap())
	}
	return false
}
