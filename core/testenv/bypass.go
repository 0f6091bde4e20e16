package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CreateBypassingRules creates obj although the CEL rules
// (x-kubernetes-validations) of the CRD crdName at schemaPath (property
// names from the version's root, such as "spec", "drainTimeout") would
// refuse it: an object as it is stored when it was written before the rules
// existed, or past them. It drops those rules, creates obj, puts them back,
// and returns once the API server enforces them again (a dry-run create of
// obj under another name is refused).
//
// Objects others create meanwhile skip the rules too: only a test that owns
// its Env should use it.
func (e *Env) CreateBypassingRules(t testing.TB, obj client.Object, crdName string, schemaPath ...string) {
	t.Helper()
	ctx := t.Context()
	rules := e.setRules(t, ctx, crdName, schemaPath, nil)
	if rules == nil {
		t.Fatalf("testenv: CRD %s has no x-kubernetes-validations at %v", crdName, schemaPath)
	}
	// The API server swaps the CRD's handler asynchronously.
	probe := func() error {
		o := obj.DeepCopyObject().(client.Object)
		return e.Client.Create(ctx, o, client.DryRunAll)
	}
	if err := poll(ctx, func() bool { return probe() == nil }); err != nil {
		t.Fatalf("testenv: %s still refuses %s without its rules: %v", crdName, obj.GetName(), probe())
	}
	if err := e.Client.Create(ctx, obj); err != nil {
		t.Fatalf("testenv: creating %s past the rules: %v", obj.GetName(), err)
	}
	e.setRules(t, ctx, crdName, schemaPath, rules)
	refused := func() error {
		o := obj.DeepCopyObject().(client.Object)
		o.SetName(o.GetName() + "-probe")
		o.SetResourceVersion("")
		o.SetUID("")
		return e.Client.Create(ctx, o, client.DryRunAll)
	}
	if err := poll(ctx, func() bool { return apierrors.IsInvalid(refused()) }); err != nil {
		t.Fatalf("testenv: %s does not enforce its rules again: %v", crdName, refused())
	}
}

// setRules replaces the x-kubernetes-validations of the CRD's schema node at
// path with rules (none when nil) and returns the ones it had.
func (e *Env) setRules(t testing.TB, ctx context.Context, crdName string, path []string, rules any) any {
	t.Helper()
	var old any
	err := retryOnConflict(ctx, func() error {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
		if err := e.Client.Get(ctx, client.ObjectKey{Name: crdName}, crd); err != nil {
			return err
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		if len(versions) != 1 {
			return fmt.Errorf("CRD %s has %d versions, want 1", crdName, len(versions))
		}
		node, _ := versions[0].(map[string]any)
		fields := []string{"schema", "openAPIV3Schema"}
		for _, p := range path {
			fields = append(fields, "properties", p)
		}
		target, ok, _ := unstructured.NestedMap(node, fields...)
		if !ok {
			return fmt.Errorf("CRD %s has no schema at %v", crdName, path)
		}
		old = target["x-kubernetes-validations"]
		if rules == nil {
			delete(target, "x-kubernetes-validations")
		} else {
			target["x-kubernetes-validations"] = rules
		}
		if err := unstructured.SetNestedMap(node, target, fields...); err != nil {
			return err
		}
		versions[0] = node
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			return err
		}
		return e.Client.Update(ctx, crd)
	})
	if err != nil {
		t.Fatalf("testenv: updating the rules of %s: %v", crdName, err)
	}
	return old
}

func retryOnConflict(ctx context.Context, f func() error) error {
	var err error
	_ = poll(ctx, func() bool {
		err = f()
		return !apierrors.IsConflict(err)
	})
	return err
}

// poll runs cond every 50ms until it holds, for at most a minute.
func poll(ctx context.Context, cond func() bool) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return cond(), nil })
}
