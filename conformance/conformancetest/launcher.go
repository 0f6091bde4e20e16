package conformancetest

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/machina-io/machina/conformance"
)

// CheckLauncherMode lets the conformance suite start the driver itself
// (launcher mode, command as --driver-command) and runs its Launcher
// checks: where the driver listens, what it does with the file at its
// path, the modes of directory and socket, SIGTERM with a create in
// flight, restart. Every check must run and pass without a warning. The
// class's provider_spec gets createDelay (seconds), which the reference
// drivers honour, so that a create is in flight at SIGTERM.
func CheckLauncherMode(t *testing.T, command string, class conformance.MachineClass, createDelay float64) {
	t.Helper()
	var spec map[string]any
	if err := json.Unmarshal(class.ProviderSpec, &spec); err != nil {
		t.Fatalf("the class's provider_spec: %v", err)
	}
	spec["createDelay"] = createDelay
	var err error
	if class.ProviderSpec, err = json.Marshal(spec); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var progress strings.Builder
	r := &conformance.Runner{Focus: regexp.MustCompile(`^Launcher/`), Progress: &progress, Verbose: true}
	rep := r.Run(ctx, conformance.Config{
		Launch:       &conformance.Launch{Command: command, StopTimeout: 20 * time.Second},
		MachineClass: class,
		Secrets:      map[string][]byte{"token": []byte("conformance-token")},
		Timeouts: conformance.Timeouts{
			Identity: 10 * time.Second, Ready: 30 * time.Second,
			Create: 30 * time.Second, Delete: 30 * time.Second, Status: 10 * time.Second,
		},
	})
	var summary strings.Builder
	rep.WriteSummary(&summary)
	if !rep.Passed() {
		t.Fatalf("the Launcher checks failed:\n%s\n%s", progress.String(), summary.String())
	}
	ran := 0
	for _, res := range rep.Tests {
		if !strings.HasPrefix(res.Name, "Launcher/") {
			continue
		}
		ran++
		if res.Status != conformance.StatusPassed {
			t.Errorf("%s: %s, want passed: %s", res.Name, res.Status, res.SkipReason)
		}
		if len(res.Warnings) > 0 {
			t.Errorf("%s: warnings %q", res.Name, res.Warnings)
		}
	}
	want := 0
	for _, tc := range conformance.Tests() {
		if strings.HasPrefix(tc.Name, "Launcher/") {
			want++
		}
	}
	if ran != want {
		t.Errorf("%d Launcher checks ran, want every one, %d:\n%s", ran, want, progress.String())
	}
	if strings.Contains(progress.String(), "answered before SIGTERM") {
		t.Error("no create was in flight at SIGTERM")
	}
	t.Logf("%s", progress.String())
}
