package controllertest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Eventually polls cond every Tick until it holds, and fails the test with
// msg (formatted with args) once WaitFor has passed. Unlike
// require.Eventually, cond runs on the test's goroutine, so it may call
// t.Fatal and read the test's variables without a race; and it runs once
// more after the deadline, so a slow first attempt does not fail a
// condition that holds.
func Eventually(t testing.TB, cond func() bool, msg string, args ...any) {
	t.Helper()
	if !eventually(cond) {
		t.Fatalf(msg, args...)
	}
}

// WaitObject reads the object at key until cond holds for it, and returns
// it. A missing object, or an error reading it, counts as not yet. When
// WaitFor has passed the test fails with what (the state waited for) and
// the last object seen, or why none was. T is a pointer type such as
// *corev1.Node.
func WaitObject[T client.Object](t testing.TB, c client.Reader, key client.ObjectKey, what string, cond func(T) bool) T {
	t.Helper()
	var last T
	var lastErr error
	if eventually(func() bool {
		obj := newObject[T]()
		if lastErr = c.Get(t.Context(), key, obj); lastErr != nil {
			return false
		}
		last = obj
		return cond(obj)
	}) {
		return last
	}
	kind := reflect.TypeFor[T]().Elem().Name()
	if lastErr != nil {
		t.Fatalf("%s %s never had %s: %v", kind, key, what, lastErr)
	}
	t.Fatalf("%s %s never had %s; last seen:\n%s", kind, key, what, dump(last))
	return last
}

// WaitGone waits until the object at key no longer exists, and fails the
// test with the object as last seen otherwise.
func WaitGone[T client.Object](t testing.TB, c client.Reader, key client.ObjectKey) {
	t.Helper()
	var last T
	var lastErr error
	if eventually(func() bool {
		obj := newObject[T]()
		lastErr = c.Get(t.Context(), key, obj)
		if lastErr == nil {
			last = obj
		}
		return apierrors.IsNotFound(lastErr)
	}) {
		return
	}
	kind := reflect.TypeFor[T]().Elem().Name()
	if lastErr != nil {
		t.Fatalf("%s %s: could not tell whether it is gone: %v", kind, key, lastErr)
	}
	t.Fatalf("%s %s is still there:\n%s", kind, key, dump(last))
}

// newObject returns a new, empty *X for T = *X.
func newObject[T client.Object]() T {
	return reflect.New(reflect.TypeFor[T]().Elem()).Interface().(T)
}

// dump renders obj for a failure message, without its managed fields,
// which are long and never what a test waits on.
func dump(obj client.Object) string {
	obj = obj.DeepCopyObject().(client.Object)
	obj.SetManagedFields(nil)
	b, err := json.MarshalIndent(obj, "", "  ")
	if err != nil {
		return fmt.Sprintf("%+v", obj)
	}
	return string(b)
}
