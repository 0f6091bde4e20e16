// Command machina-driver-inmemory serves the inmemory driver on the Driver
// API: VMs in memory, optional capabilities switchable by flag, and faults
// injectable by flag or environment, to exercise the core and the
// conformance suite. Run it with -h for its flags; every flag can also be
// set through the environment variable MACHINA_INMEMORY_<FLAG> (faults:
// MACHINA_INMEMORY_FAULTS; endpoint: MACHINA_DRIVER_ENDPOINT).
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/machina-io/machina/drivers/inmemory"
	"github.com/machina-io/machina/sdk"
)

// version is set at build time with
// -ldflags "-X main.version=v1.2.3".
var version = inmemory.DefaultVersion

func main() {
	fs := flag.NewFlagSet(os.Args[0], flag.ContinueOnError)
	c, err := parseConfig(fs, os.Args[1:], os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(os.Stdout)
		fmt.Printf("Usage of %s:\n", os.Args[0])
		fs.PrintDefaults()
		return
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "machina-driver-inmemory: %v\n", err)
		os.Exit(2)
	}
	if c.showVersion {
		fmt.Println(inmemory.Name, version)
		return
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: c.logLevel}))
	c.opts.Logger = logger
	d, err := inmemory.Open(c.opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "machina-driver-inmemory: %v\n", err)
		os.Exit(1)
	}
	if len(c.opts.Faults) > 0 {
		logger.Warn("fault injection is on", "faults", len(c.opts.Faults))
	}

	// sdk.Main reads the endpoint from a flag named "endpoint" on the
	// default flag set, and parses os.Args with that set unless it was
	// parsed already. Hand it the value parsed here, and mark the set as
	// parsed so that it does not trip over this driver's own flags.
	flag.String("endpoint", c.endpoint, "Driver API endpoint")
	_ = flag.CommandLine.Parse(nil) // no arguments: cannot fail
	sdk.Main(inmemory.Info(version), d, append(d.SDKOptions(), sdk.WithLogger(logger))...)
}
