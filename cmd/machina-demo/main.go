// Command machina-demo runs machina's whole machine lifecycle on the local
// machine, with nothing but Go and the binaries of this repository: it
// starts etcd and kube-apiserver (controller-runtime's envtest), the
// virtualnode driver and the manager as processes joined by a Unix socket,
// creates a MachineDeployment of three machines, rolls it to another
// MachineClass, updates it in place, rolls a MachineConfig out to a pool of
// its nodes (a real machina-node-agent per node, each writing into a
// directory of its own, pool.go) and scales it to zero, showing the
// machines and Nodes as they change. `make demo` (hack/demo.sh) builds everything and runs it.
//
// With --keep it stops after the rollout and keeps everything running until
// Ctrl-C, printing a kubeconfig to explore the cluster with kubectl.
//
// With --driver-endpoint (or --driver) it is a local cluster for a driver
// of the user's instead (local.go): the manager against that driver,
// optionally a MachineDeployment of three on it (--provider-spec), until
// Ctrl-C. docs/writing-a-driver.md walks through it.
//
// The manager and the driver run as the ServiceAccount of deploy/ with its
// RBAC, not as cluster admin, so the demo also shows that the manifests
// grant enough. Every process the demo starts dies with it, however it
// ends.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// config is the command line.
type config struct {
	repo    string
	bin     string
	assets  string
	keep    bool
	timeout time.Duration
	logDir  string

	// A local cluster for a driver of the user's (local.go).
	driverEndpoint string
	driverPath     string
	driverArgs     stringList
	noNodes        bool
	providerSpec   string
	replicas       int32
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	execAsset() // returns unless started as a control plane wrapper
	os.Exit(run())
}

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitInterrupted = 130
)

func run() int {
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "machina-demo: %v\n", err)
		return exitUsage
	}
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	d := &demo{cfg: cfg, screen: newScreen(os.Stdout)}
	err = d.run(ctx)
	interrupted := ctx.Err() != nil
	stopSignals()
	// A further Ctrl-C during the cleanup ends the demo at once: its
	// processes die with it (parent-death signal), and only its files
	// need removing.
	forced := make(chan os.Signal, 1)
	signal.Notify(forced, os.Interrupt, syscall.SIGTERM)
	stoppedAt := time.Now()
	go func() {
		for range forced {
			// One Ctrl-C may arrive twice, directly and through the
			// process group (as `timeout` sends it): only a later one
			// forces.
			if time.Since(stoppedAt) > time.Second {
				break
			}
		}
		fmt.Fprintln(os.Stderr, "machina-demo: interrupted again, exiting without a graceful stop")
		if err := d.removeFiles(); err != nil {
			fmt.Fprintln(os.Stderr, "machina-demo:", err)
		}
		os.Exit(exitInterrupted)
	}()
	d.screen.Leave()
	if err != nil && !(interrupted && errors.Is(err, context.Canceled)) {
		fmt.Fprintf(os.Stderr, "\nmachina-demo: %v\n", err)
	}
	if cerr := d.cleanup(); cerr != nil {
		fmt.Fprintf(os.Stderr, "machina-demo: cleaning up: %v\n", cerr)
		if err == nil {
			err = cerr
		}
	}
	switch {
	case interrupted && cfg.keep:
		// --keep runs until Ctrl-C: that is its normal end.
		return exitOK
	case interrupted:
		return exitInterrupted
	case err != nil:
		return exitFailed
	}
	return exitOK
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("machina-demo", flag.ContinueOnError)
	var c config
	fs.StringVar(&c.repo, "repo", ".", "root of the machina repository (deploy/ is read from it)")
	fs.StringVar(&c.bin, "bin", "bin", "directory with the machina-manager and machina-driver-virtualnode binaries")
	fs.StringVar(&c.assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"),
		"directory with etcd, kube-apiserver and kubectl (default $KUBEBUILDER_ASSETS; hack/envtest-assets.sh prints it)")
	fs.BoolVar(&c.keep, "keep", false, "after the rollout, keep everything running until Ctrl-C instead of scaling to zero and exiting")
	fs.DurationVar(&c.timeout, "timeout", 5*time.Minute, "how long each step may take")
	fs.StringVar(&c.logDir, "log-dir", "", "keep the manager and driver logs in this directory (default: a temporary directory, removed at exit)")
	fs.StringVar(&c.driverEndpoint, "driver-endpoint", "",
		"a local cluster for your driver: run the manager against the driver serving this endpoint (unix:///path) instead of the demo's scenario; runs until Ctrl-C")
	fs.StringVar(&c.driverPath, "driver", "",
		"a local cluster for your driver: start this driver binary (with MACHINA_DRIVER_ENDPOINT set to a socket of the demo's) and run the manager against it; runs until Ctrl-C")
	fs.Var(&c.driverArgs, "driver-arg", "an argument for --driver's binary (repeatable)")
	fs.BoolVar(&c.noNodes, "no-nodes", false, "the driver registers no Nodes: run the manager with --target-kubeconfig=none (machines are available once their VM exists)")
	fs.StringVar(&c.providerSpec, "provider-spec", "",
		"with --driver or --driver-endpoint: create MachineClass \"local\" with this providerSpec (a JSON object) and MachineDeployment \"local\" of --replicas machines")
	replicas := fs.Int("replicas", 3, "machines of MachineDeployment \"local\" (with --provider-spec)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.replicas = int32(*replicas)
	if err := c.checkLocal(); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if c.assets == "" {
		return c, errors.New("--assets (or KUBEBUILDER_ASSETS) is required: run through `make demo`, or pass --assets=$(hack/envtest-assets.sh)")
	}
	if c.timeout <= 0 {
		return c, errors.New("--timeout must be positive")
	}
	for _, p := range []*string{&c.repo, &c.bin, &c.assets, &c.logDir, &c.driverPath} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return c, err
		}
		*p = abs
	}
	return c, nil
}

// fatalf reports an error that leaves the demo no way on, and exits.
func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "machina-demo: "+format+"\n", args...)
	os.Exit(exitFailed)
}

// checkLocal checks the flags of a local cluster for the user's driver.
// Such a cluster runs until Ctrl-C, as --keep does.
func (c *config) checkLocal() error {
	if c.driverEndpoint != "" && c.driverPath != "" {
		return errors.New("--driver and --driver-endpoint exclude each other: the demo starts your driver, or you do")
	}
	if !c.local() {
		if c.noNodes || c.providerSpec != "" || len(c.driverArgs) > 0 {
			return errors.New("--no-nodes, --provider-spec and --driver-arg need --driver or --driver-endpoint")
		}
		return nil
	}
	if c.driverEndpoint != "" && !strings.HasPrefix(c.driverEndpoint, "unix://") && !strings.HasPrefix(c.driverEndpoint, "tcp://") {
		return fmt.Errorf("--driver-endpoint %q: want unix:///path/to/socket (or tcp://host:port)", c.driverEndpoint)
	}
	if c.providerSpec != "" {
		if err := checkProviderSpec(c.providerSpec); err != nil {
			return err
		}
	}
	if c.replicas < 0 {
		return errors.New("--replicas must not be negative")
	}
	c.keep = true
	return nil
}
