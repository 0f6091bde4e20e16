package controllertest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Namespace creates a namespace whose name starts with prefix and is new to
// the API server, so that each subtest sees only its own objects.
func Namespace(t testing.TB, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(t.Context(), ns); err != nil {
		t.Fatalf("creating a namespace %s-*: %v", prefix, err)
	}
	return ns.Name
}

// HasFinalizer reads obj from the API server and tells whether it has
// finalizer. The object must exist.
func HasFinalizer(t testing.TB, c client.Client, obj client.Object, finalizer string) bool {
	t.Helper()
	got := obj.DeepCopyObject().(client.Object)
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatalf("reading %s: %v", obj.GetName(), err)
	}
	return controllerutil.ContainsFinalizer(got, finalizer)
}

// RequireFinalizer waits until obj has finalizer (want true) or has not
// (want false).
func RequireFinalizer(t testing.TB, c client.Client, obj client.Object, finalizer string, want bool) {
	t.Helper()
	if !eventually(func() bool { return HasFinalizer(t, c, obj, finalizer) == want }) {
		t.Fatalf("%s: finalizer %s present should be %v", obj.GetName(), finalizer, want)
	}
}

// RequireFinalizerFor checks that obj keeps having finalizer (want true) or
// keeps not having it (want false) for d. It is how a test shows that a
// controller does not act: d should span several reconciles.
func RequireFinalizerFor(t testing.TB, c client.Client, obj client.Object, finalizer string, want bool, d time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(Tick) {
		if HasFinalizer(t, c, obj, finalizer) != want {
			t.Fatalf("%s: finalizer %s present should stay %v", obj.GetName(), finalizer, want)
		}
	}
}

// RequireGone waits until obj no longer exists.
func RequireGone(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	if !eventually(func() bool {
		err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err)
	}) {
		t.Fatalf("%s is still there", obj.GetName())
	}
}

// GetNode reads Node name from c, failing the test when it cannot.
func GetNode(t testing.TB, c client.Client, name string) *corev1.Node {
	t.Helper()
	node := &corev1.Node{}
	if err := c.Get(t.Context(), client.ObjectKey{Name: name}, node); err != nil {
		t.Fatalf("getting node %s: %v", name, err)
	}
	return node
}

// PatchNodeAnnotations sets (or, for "", removes) annotations of Node name
// with a merge patch, as a node agent does.
func PatchNodeAnnotations(t testing.TB, c client.Client, name string, set map[string]string) {
	t.Helper()
	node := GetNode(t, c, name)
	patched := node.DeepCopy()
	if patched.Annotations == nil {
		patched.Annotations = map[string]string{}
	}
	for k, v := range set {
		if v == "" {
			delete(patched.Annotations, k)
		} else {
			patched.Annotations[k] = v
		}
	}
	if err := c.Patch(t.Context(), patched, client.MergeFrom(node)); err != nil {
		t.Fatalf("patching the annotations of node %s: %v", name, err)
	}
}
