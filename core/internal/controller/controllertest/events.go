package controllertest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// RequireEvent waits for an event with reason about obj whose note contains
// want. The kind is looked up in c's scheme, because typed objects read
// from the API server carry no kind. Events about a cluster-scoped object
// (a Node) are in the default namespace.
func RequireEvent(t *testing.T, c client.Client, obj client.Object, reason, want string) {
	t.Helper()
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	require.NoError(t, err)
	ns := obj.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	// EventuallyWithT reports the last attempt's failure, so a test that
	// fails shows the notes that were there.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		list := &eventsv1.EventList{}
		require.NoError(ct, c.List(t.Context(), list, client.InNamespace(ns)))
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Kind == gvk.Kind && e.Regarding.Name == obj.GetName() && e.Reason == reason {
				notes = append(notes, e.Note)
			}
		}
		assert.True(ct, containsSubstring(notes, want),
			"no %s event on %s %s containing %q; saw %q", reason, gvk.Kind, obj.GetName(), want, notes)
	}, WaitFor, Tick)
}

func containsSubstring(notes []string, want string) bool {
	for _, n := range notes {
		if strings.Contains(n, want) {
			return true
		}
	}
	return false
}
