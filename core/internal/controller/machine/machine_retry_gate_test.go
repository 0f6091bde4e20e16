package machine

import (
	"testing"
	"time"

	"github.com/machina-io/machina/core/api/v1alpha1"
)

func TestRetryGate(t *testing.T) {
	var g retryGate
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	if w := g.wait("a", v1alpha1.DeletionStepDeleteVM, now); w != 0 {
		t.Fatalf("an empty gate holds for %s", w)
	}
	g.hold("a", v1alpha1.DeletionStepDeleteVM, now.Add(3*time.Second))
	if w := g.wait("a", v1alpha1.DeletionStepDeleteVM, now.Add(time.Second)); w != 2*time.Second {
		t.Errorf("held step: wait %s, want 2s", w)
	}
	if w := g.wait("b", v1alpha1.DeletionStepDeleteVM, now); w != 0 {
		t.Errorf("another machine waits %s", w)
	}
	if w := g.wait("a", v1alpha1.DeletionStepDeleteVM, now.Add(3*time.Second)); w != 0 {
		t.Errorf("at the end of the period: wait %s, want 0", w)
	}
	if len(g.holds) != 0 {
		t.Errorf("an expired hold is kept: %v", g.holds)
	}

	// A deletion that moved on to another step drops the hold.
	g.hold("a", v1alpha1.DeletionStepGetVMStatus, now.Add(time.Hour))
	if w := g.wait("a", v1alpha1.DeletionStepDrain, now); w != 0 {
		t.Errorf("a hold of GetVMStatus holds the Drain step %s", w)
	}
	if len(g.holds) != 0 {
		t.Errorf("the hold of a finished step is kept: %v", g.holds)
	}
	g.hold("a", v1alpha1.DeletionStepDeleteVM, now.Add(time.Hour))
	g.forget("a")
	if w := g.wait("a", v1alpha1.DeletionStepDeleteVM, now); w != 0 {
		t.Errorf("a forgotten machine waits %s", w)
	}
}
