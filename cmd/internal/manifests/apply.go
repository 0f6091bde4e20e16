package manifests

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldOwner is the server-side apply field manager of objects applied with
// Apply unless the caller names another.
const FieldOwner = "machina"

// kindOrder is the order Apply creates objects in: what others depend on
// first (a namespace before its objects, a CRD before its objects, a
// ServiceAccount and its rights before a workload that uses them). Kinds
// not listed come last, in their given order.
var kindOrder = []string{
	"Namespace",
	"CustomResourceDefinition",
	"ServiceAccount",
	"ClusterRole",
	"Role",
	"ClusterRoleBinding",
	"RoleBinding",
	"Secret",
	"ConfigMap",
}

func rank(kind string) int {
	if i := slices.Index(kindOrder, kind); i >= 0 {
		return i
	}
	return len(kindOrder)
}

// Apply creates or updates objs with server-side apply as fieldOwner, taking
// ownership of conflicting fields (as `kubectl apply --server-side
// --force-conflicts` does). Namespaces and CustomResourceDefinitions go
// first, and Apply waits until the CRDs are established before it applies
// the rest, so that objects of their kinds in the same batch are accepted.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, fieldOwner string) error {
	sorted := slices.Clone(objs)
	slices.SortStableFunc(sorted, func(a, b *unstructured.Unstructured) int {
		return rank(a.GetKind()) - rank(b.GetKind())
	})
	split := 0
	var crds []string
	for split < len(sorted) && rank(sorted[split].GetKind()) <= rank("CustomResourceDefinition") {
		if sorted[split].GetKind() == "CustomResourceDefinition" {
			crds = append(crds, sorted[split].GetName())
		}
		split++
	}
	if err := applyEach(ctx, c, sorted[:split], fieldOwner); err != nil {
		return err
	}
	if err := waitEstablished(ctx, c, crds); err != nil {
		return err
	}
	return applyEach(ctx, c, sorted[split:], fieldOwner)
}

func applyEach(ctx context.Context, c client.Client, objs []*unstructured.Unstructured, fieldOwner string) error {
	for _, obj := range objs {
		// Apply fills its argument from the response; a copy keeps the
		// caller's objects as rendered.
		u := obj.DeepCopy()
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s: %w", Describe(obj), err)
		}
	}
	return nil
}

// waitEstablished waits until every named CustomResourceDefinition has the
// condition Established=True. It reads them as unstructured objects so that
// the client's scheme need not know apiextensions.
func waitEstablished(ctx context.Context, c client.Client, names []string) error {
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true,
			func(ctx context.Context) (bool, error) {
				crd := &unstructured.Unstructured{}
				crd.SetAPIVersion("apiextensions.k8s.io/v1")
				crd.SetKind("CustomResourceDefinition")
				if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
					return false, client.IgnoreNotFound(err)
				}
				conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
				for _, raw := range conds {
					cond, _ := raw.(map[string]any)
					if cond["type"] == "Established" && cond["status"] == "True" {
						return true, nil
					}
				}
				return false, nil
			})
		if err != nil {
			return fmt.Errorf("waiting for CustomResourceDefinition %s to be established: %w", name, err)
		}
	}
	return nil
}

// Describe names an object for messages: "Kind namespace/name", or
// "Kind name" for a cluster-scoped object.
func Describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return obj.GetKind() + " " + obj.GetName()
}
