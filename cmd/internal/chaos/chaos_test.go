package chaos

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/machina-io/machina/cmd/internal/manifests"
	"github.com/machina-io/machina/core/testenv"
)

// Flags for `make chaos` (hack/chaos.sh passes them after -args); without
// them the test runs the bounded configuration, as `make test` does.
var (
	full      = flag.Bool("chaos.full", false, "run the full configuration (make chaos) instead of the bounded one")
	seed      = flag.Int64("chaos.seed", 0, "seed of the random kill points and driver faults (0: from the clock; printed at the start)")
	rounds    = flag.Int("chaos.rounds", 0, "rounds (0: the configuration's)")
	machines  = flag.Int("chaos.machines", 0, "virtualnode fleet size (0: the configuration's)")
	faultMach = flag.Int("chaos.fault-machines", 0, "inmemory fleet size (0: the configuration's)")
	kills     = flag.Int("chaos.manager-kills", -1, "manager SIGKILLs per phase (-1: the configuration's)")
	outage    = flag.Duration("chaos.outage", -1, "API server outage (-1: the configuration's)")
	logDir    = flag.String("chaos.log-dir", "", "directory for every log (default: a temporary directory, kept when the test fails)")
	managerFl = flag.String("chaos.manager-args", "", "extra manager flags, space-separated, replacing the configuration's")
)

// TestChaos runs the fault suite: in `make test` the bounded configuration
// (one round, 6 + 6 machines, a 15-second outage, about two to three
// minutes); with -chaos.full, as `make chaos` runs it, the full one.
func TestChaos(t *testing.T) {
	assets := testenv.Assets(t)
	root, err := manifests.RepoRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Bounded()
	if *full {
		cfg = Full()
	}
	cfg.Seed = *seed
	if *rounds > 0 {
		cfg.Rounds = *rounds
	}
	if *machines > 0 {
		cfg.Machines = *machines
	}
	if *faultMach > 0 {
		cfg.FaultMachines = *faultMach
	}
	if *kills >= 0 {
		cfg.ManagerKills = *kills
	}
	if *outage >= 0 {
		cfg.Outage = *outage
	}
	if *managerFl != "" {
		cfg.ManagerArgs = strings.Fields(*managerFl)
	}
	cfg.Assets, cfg.Root = assets, root
	cfg.BinDir, cfg.WorkDir = t.TempDir(), t.TempDir()
	cfg.LogDir = *logDir
	if cfg.LogDir == "" {
		// Not t.TempDir: the logs must outlive a failed test.
		if cfg.LogDir, err = os.MkdirTemp("", "machina-chaos-logs-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if !t.Failed() {
				_ = os.RemoveAll(cfg.LogDir)
			}
		})
	}

	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		// Leave time to stop everything before go test's timeout.
		var cancel func()
		ctx, cancel = context.WithDeadline(ctx, d.Add(-time.Minute))
		defer cancel()
	}
	// Standard output, not t.Log: the table must print as it is.
	report, err := Run(ctx, cfg, os.Stdout)
	if err != nil {
		t.Fatalf("chaos (seed %d): %v; logs in %s", cfg.Seed, err, cfg.LogDir)
	}
	for _, p := range report.Problems() {
		t.Errorf("%s", p)
	}
	if t.Failed() {
		t.Logf("seed %d; logs in %s", report.Seed, filepath.Clean(cfg.LogDir))
	}
}
