// Command machina-manager runs the machina core: the Machine, MachineSet,
// MachineDeployment, MachineClass, Secret and Node controllers, talking to
// one driver over the Driver API. Flags keep MCM's names and defaults where
// MCM has the same knob; run it with -h for the list, and see
// docs/operating.md for what each does.
//
// SIGTERM or SIGINT stops it gracefully (a second signal exits at once).
// Exit codes: 0 after a graceful stop, 1 when it cannot start or fails,
// 2 for bad flags.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/machina-io/machina/core/manager"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it parses args, runs the manager until
// a signal arrives, and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "machina-manager: %v\n", err)
		return 2
	}
	if cfg.showVersion {
		fmt.Fprintln(stdout, "machina-manager", version)
		return 0
	}

	logger := cfg.logger(stderr)
	ctrl.SetLogger(logger)
	setupKlog(logger)
	cfg.opts.Logger = logger
	log := logger.WithName("setup")
	log.Info("Starting machina-manager", "version", version)

	m, err := manager.New(cfg.opts)
	if err != nil {
		log.Error(err, "Cannot start")
		return 1
	}
	if err := m.Run(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "Manager failed")
		return 1
	}
	return 0
}
