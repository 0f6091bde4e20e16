package chaos

import (
	"fmt"
	"time"
)

// Config is one run of the suite.
type Config struct {
	// Seed drives every random choice (when the manager and the driver are
	// killed, the fault generator of the inmemory driver); 0 picks one.
	Seed int64
	// Rounds repeats the phases on the same fleets.
	Rounds int
	// Machines is the size of the virtualnode fleet after its scale-up; the
	// driver phase scales it to one and a half times that.
	Machines int
	// FaultMachines is the size of the inmemory fleet with faults.
	FaultMachines int
	// ManagerKills is how many times the manager is killed with SIGKILL in
	// each phase that kills it, at random points within KillWindow of the
	// phase's change (each point measured from the previous start).
	ManagerKills int
	KillWindow   time.Duration
	// Outage is how long the API server is down in the outage phase.
	Outage time.Duration
	// FaultRate is the probability that a driver call of the inmemory fleet
	// fails; creations and deletions fail after they took effect (the
	// answer is lost), every other call before.
	FaultRate float64
	// ConvergeTimeout bounds the wait for a fleet to converge after a
	// phase.
	ConvergeTimeout time.Duration
	// ManagerArgs are extra manager flags, after the suite's own (which
	// only say where things are); empty runs the manager with its defaults.
	ManagerArgs []string

	// Assets holds etcd and kube-apiserver (hack/envtest-assets.sh).
	Assets string
	// Root is the repository root, BinDir where the binaries are built,
	// WorkDir where the control plane keeps its data, LogDir where every
	// log goes.
	Root, BinDir, WorkDir, LogDir string
}

// Bounded is the configuration `make test` runs: small fleets, one round,
// a 15-second outage, and manager timeouts scaled down in proportion so
// that the outage outlasts them as a 90-second outage outlasts the
// defaults (lease 15s, renew deadline 10s, API server check every 60s with
// a 30s timeout).
func Bounded() Config {
	return Config{
		Rounds:          1,
		Machines:        6,
		FaultMachines:   6,
		ManagerKills:    1,
		KillWindow:      6 * time.Second,
		Outage:          15 * time.Second,
		FaultRate:       0.3,
		ConvergeTimeout: 2 * time.Minute,
		ManagerArgs: []string{
			"--leader-elect-lease-duration=4s",
			"--leader-elect-renew-deadline=3s",
			"--leader-elect-retry-period=1s",
			"--machine-safety-apiserver-statuscheck-period=6s",
			"--machine-safety-apiserver-statuscheck-timeout=5s",
		},
	}
}

// Full is the configuration `make chaos` runs: larger fleets, two rounds,
// a 90-second outage, the manager with its default flags.
func Full() Config {
	return Config{
		Rounds:          2,
		Machines:        30,
		FaultMachines:   20,
		ManagerKills:    2,
		KillWindow:      25 * time.Second,
		Outage:          90 * time.Second,
		FaultRate:       0.3,
		ConvergeTimeout: 5 * time.Minute,
	}
}

func (c Config) check() error {
	switch {
	case c.Rounds < 1, c.Machines < 1, c.FaultMachines < 1:
		return fmt.Errorf("rounds, machines and fault machines must be positive")
	case c.ManagerKills < 0, c.KillWindow <= 0, c.Outage < 0, c.ConvergeTimeout <= 0:
		return fmt.Errorf("kills, kill window, outage and converge timeout must not be negative")
	case c.FaultRate < 0 || c.FaultRate > 1:
		return fmt.Errorf("fault rate %v is not within 0..1", c.FaultRate)
	case c.Assets == "" || c.Root == "" || c.BinDir == "" || c.WorkDir == "" || c.LogDir == "":
		return fmt.Errorf("assets, root, bin, work and log directories must be set")
	}
	return nil
}
