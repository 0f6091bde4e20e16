package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	os.Exit(run(ctrl.SetupSignalHandler(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it parses args, runs the agent until ctx
// is done, and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "machina-node-agent: %v\n", err)
		return 2
	}
	if cfg.showVersion {
		fmt.Fprintln(stdout, "machina-node-agent", version)
		return 0
	}
	logger := zap.New(zap.UseFlagOptions(&cfg.zap), zap.WriteTo(stderr))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger) // client-go's own messages, in the same format
	log := logger.WithName("setup")
	log.Info("Starting machina-node-agent", "version", version, "node", cfg.nodeName,
		"root", cfg.root, "sourceDir", cfg.sourceDir, "stateDir", cfg.stateDir)

	mgr, err := newManager(cfg, logger)
	if err != nil {
		log.Error(err, "Cannot start")
		return 1
	}
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "Agent failed")
		return 1
	}
	log.Info("Stopped")
	return 0
}
