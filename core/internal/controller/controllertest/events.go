package controllertest

import (
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// RequireEvent waits for an event with reason about obj whose note contains
// want. The kind is looked up in c's scheme, because typed objects read
// from the API server carry no kind. Events about a cluster-scoped object
// (a Node) are in the default namespace.
func RequireEvent(t testing.TB, c client.Client, obj client.Object, reason, want string) {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		t.Fatalf("kind of %s: %v", obj.GetName(), err)
	}
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	// The failure reports the last attempt, so a test that fails shows the
	// notes that were there.
	var notes []string
	var lastErr error
	for deadline := time.Now().Add(WaitFor); ; time.Sleep(Tick) {
		list := &eventsv1.EventList{}
		notes, lastErr = nil, c.List(t.Context(), list, client.InNamespace(ns))
		for _, e := range list.Items {
			if e.Regarding.Kind == gvk.Kind && e.Regarding.Name == obj.GetName() && e.Reason == reason {
				notes = append(notes, e.Note)
			}
		}
		if lastErr == nil && containsSubstring(notes, want) {
			return
		}
		if time.Now().After(deadline) {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("listing events in %s: %v", ns, lastErr)
	}
	t.Fatalf("no %s event on %s %s containing %q; saw %q", reason, gvk.Kind, obj.GetName(), want, notes)
}

func containsSubstring(notes []string, want string) bool {
	for _, n := range notes {
		if strings.Contains(n, want) {
			return true
		}
	}
	return false
}
