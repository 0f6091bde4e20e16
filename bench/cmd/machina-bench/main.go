// Command machina-bench runs machina's benchmarks on a local API server
// (etcd and kube-apiserver started through envtest) and prints one table;
// the results also go to a JSON file. `make bench` runs it through
// hack/bench.sh. See docs/performance.md for what each figure means.
//
// It measures:
//  1. driver call round trips (the Go benchmarks of core/internal/driver,
//     run with `go test`);
//  2. scale-up of one MachineDeployment from 0 to --machines with the
//     virtualnode driver and the manager as real processes;
//  3. a rolling update of --roll-machines machines with maxSurge
//     --roll-surge percent;
//  4. scale-down to zero (and, with --fleet, a scale-up and scale-down of
//     that many machines, printed beside the first pair);
//  5. an in-place rollout of --inplace-machines machines with maxUnavailable
//     --inplace-unavailable percent, the virtualnode driver playing the
//     node agents;
//  6. a machine configuration pool rollout of --pool-machines nodes with
//     maxUnavailable --pool-unavailable percent, the virtualnode driver
//     playing the node agents (--skip=pool leaves it out);
//  7. the API server's own write ceiling.
//
// Benchmarks measure; they never fail because of a time. The exit code is
// 1 only when something could not run at all (no control plane, a process
// crashed, an API error).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// Binaries the scenarios run, found in --bin.
const (
	managerBinary = "machina-manager"
	driverBinary  = "machina-driver-virtualnode"
)

// config is the command line.
type config struct {
	repo, assets, bin, out, workDir string
	machines, rollMachines          int
	fleet                           int
	rollSurge                       int
	inPlaceMachines                 int
	inPlaceUnavailable              int
	inPlaceDuration                 time.Duration
	poolMachines                    int
	poolUnavailable                 int
	poolDuration                    time.Duration
	bootDelay, heartbeat, timeout   time.Duration
	ceilingObjects                  int
	ceilingConcurrency              []int
	driverBenchtime                 string
	skip                            map[string]bool
	managerArgs                     []string
	apiServerVerbosity              int
	keepWorkDir                     bool
}

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("machina-bench", flag.ContinueOnError)
	fs.StringVar(&c.repo, "repo", "", "repository root (default: the directory above that holds go.work)")
	fs.StringVar(&c.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "directory with etcd and kube-apiserver (hack/envtest-assets.sh prints it)")
	fs.StringVar(&c.bin, "bin", "", "directory with "+managerBinary+" and "+driverBinary+" (default: <repo>/bin)")
	fs.StringVar(&c.out, "out", "", "JSON results file (default: <repo>/bench/results.json)")
	fs.StringVar(&c.workDir, "work-dir", "", "directory for the control plane's data, logs and sockets (default: a new temp dir, removed at the end unless --keep)")
	fs.BoolVar(&c.keepWorkDir, "keep", false, "keep the work directory (logs, audit log)")
	fs.IntVar(&c.machines, "machines", 1000, "machines of the scale-up and scale-down")
	fs.IntVar(&c.fleet, "fleet", 0, "also scale up to this many machines and down again after the --machines pair, and print both side by side (0: not run; e.g. 5000)")
	fs.IntVar(&c.rollMachines, "roll-machines", 200, "machines of the rolling update")
	fs.IntVar(&c.rollSurge, "roll-surge", 10, "maxSurge of the rolling update, percent")
	fs.IntVar(&c.inPlaceMachines, "inplace-machines", 200, "machines of the in-place rollout")
	fs.IntVar(&c.inPlaceUnavailable, "inplace-unavailable", 10, "maxUnavailable of the in-place rollout, percent")
	fs.DurationVar(&c.inPlaceDuration, "inplace-duration", 2*time.Second, "how long the simulated node agent takes to update a node in place")
	fs.IntVar(&c.poolMachines, "pool-machines", 200, "nodes of the machine configuration pool rollout")
	fs.IntVar(&c.poolUnavailable, "pool-unavailable", 10, "maxUnavailable of the pool rollout, percent")
	fs.DurationVar(&c.poolDuration, "pool-duration", 2*time.Second, "how long the simulated node agent takes to write a MachineConfig")
	fs.DurationVar(&c.bootDelay, "boot-delay", 2*time.Second, "virtualnode bootDelay: how long a new Node reports NotReady (the machine start-up)")
	fs.DurationVar(&c.heartbeat, "heartbeat-interval", 30*time.Second, "virtualnode --heartbeat-interval (the simulated kubelets' status and lease updates)")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "how long a scenario may take before it is reported as not done")
	fs.IntVar(&c.ceilingObjects, "ceiling-objects", 2000, "objects created per kind and concurrency for the API server ceiling")
	conc := fs.String("ceiling-concurrency", "1,8,32", "client concurrencies of the API server ceiling")
	fs.StringVar(&c.driverBenchtime, "driver-benchtime", "1s", "-benchtime of the driver call benchmarks")
	skip := fs.String("skip", "", "comma-separated parts to skip: driver, ceiling, scale, roll, inplace, pool")
	fs.IntVar(&c.apiServerVerbosity, "apiserver-verbosity", 0, "the API server's --v; its log is apiserver.log in the work directory (see --keep)")
	fs.Var((*stringList)(&c.managerArgs), "manager-arg", "extra flag for the manager, e.g. --manager-arg=--kube-api-qps=200 (repeatable)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	for _, s := range strings.Split(*conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--ceiling-concurrency: %q is not a positive number", s)
		}
		c.ceilingConcurrency = append(c.ceilingConcurrency, n)
	}
	c.skip = map[string]bool{}
	for _, s := range strings.Split(*skip, ",") {
		switch s = strings.TrimSpace(s); s {
		case "":
		case "driver", "ceiling", "scale", "roll", "inplace", "pool":
			c.skip[s] = true
		default:
			return nil, fmt.Errorf("--skip: unknown part %q (want driver, ceiling, scale, roll, inplace, pool)", s)
		}
	}
	if c.machines < 1 || c.rollMachines < 1 || c.rollSurge < 1 || c.rollSurge > 100 {
		return nil, errors.New("--machines and --roll-machines must be positive, --roll-surge 1 to 100")
	}
	if c.fleet < 0 {
		return nil, errors.New("--fleet must not be negative")
	}
	if c.inPlaceMachines < 1 || c.inPlaceUnavailable < 1 || c.inPlaceUnavailable > 100 || c.inPlaceDuration < 0 {
		return nil, errors.New("--inplace-machines must be positive, --inplace-unavailable 1 to 100, --inplace-duration not negative")
	}
	if c.poolMachines < 1 || c.poolUnavailable < 1 || c.poolUnavailable > 100 || c.poolDuration < 0 {
		return nil, errors.New("--pool-machines must be positive, --pool-unavailable 1 to 100, --pool-duration not negative")
	}
	if c.repo == "" {
		repo, err := findRepo()
		if err != nil {
			return nil, err
		}
		c.repo = repo
	}
	if c.bin == "" {
		c.bin = filepath.Join(c.repo, "bin")
	}
	if c.out == "" {
		c.out = filepath.Join(c.repo, "bench", "results.json")
	}
	return c, nil
}

// findRepo returns the nearest directory above the working directory that
// holds go.work.
func findRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory: pass --repo")
		}
		dir = parent
	}
}

func main() {
	os.Exit(benchMain())
}

// benchMain is main, apart from the process: it returns the exit code, so
// that its deferred calls run.
func benchMain() int {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "machina-bench:", err)
		return 2
	}
	// Errors of the tracker's informers, nothing else, reach stderr.
	ctrllog.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.Level(zapcore.ErrorLevel)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := &Results{
		Started: time.Now(),
		Host:    Host{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()},
		Config: RunConfig{
			Machines: cfg.machines, Fleet: cfg.fleet, RollMachines: cfg.rollMachines, RollSurgePercent: cfg.rollSurge,
			InPlaceMachines: cfg.inPlaceMachines, InPlaceUnavailablePercent: cfg.inPlaceUnavailable, InPlaceDuration: cfg.inPlaceDuration.String(),
			PoolMachines: cfg.poolMachines, PoolUnavailablePercent: cfg.poolUnavailable, PoolDuration: cfg.poolDuration.String(),
			BootDelay: cfg.bootDelay.String(), HeartbeatInterval: cfg.heartbeat.String(),
			ManagerArgs: append([]string{}, cfg.managerArgs...), CeilingObjects: cfg.ceilingObjects,
		},
	}
	runErr := run(ctx, cfg, res)
	if runErr != nil {
		res.Errors = append(res.Errors, runErr.Error())
	}
	printTable(os.Stdout, res)
	if err := writeJSON(cfg.out, res); err != nil {
		fmt.Fprintln(os.Stderr, "machina-bench: writing results:", err)
		return 1
	}
	fmt.Printf("\nresults written to %s\n", cfg.out)
	if runErr != nil {
		return 1
	}
	return 0
}
