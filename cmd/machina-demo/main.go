// Command machina-demo runs machina's whole machine lifecycle on the local
// machine, with nothing but Go and the binaries of this repository: it
// starts etcd and kube-apiserver (controller-runtime's envtest), the
// virtualnode driver and the manager as processes joined by a Unix socket,
// creates a MachineDeployment of three machines, rolls it to another
// MachineClass and scales it to zero, showing the machines and Nodes as
// they change. `make demo` (hack/demo.sh) builds everything and runs it.
//
// With --keep it stops after the rollout and keeps everything running until
// Ctrl-C, printing a kubeconfig to explore the cluster with kubectl.
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
}

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
		d.removeFiles()
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
	if err := fs.Parse(args); err != nil {
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
	for _, p := range []*string{&c.repo, &c.bin, &c.assets, &c.logDir} {
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
