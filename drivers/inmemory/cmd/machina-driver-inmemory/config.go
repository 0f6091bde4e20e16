package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/machina-io/machina/drivers/inmemory"
)

// envPrefix prefixes the environment variable of every flag: --crash-after
// is also MACHINA_INMEMORY_CRASH_AFTER. A flag given on the command line
// wins over its variable.
const envPrefix = "MACHINA_INMEMORY_"

// envOverrides names variables that do not follow envPrefix+FLAG: the fault
// list is plural in the environment, and the endpoint variable is the SDK's.
var envOverrides = map[string]string{
	"fault":    inmemory.FaultsEnv,
	"endpoint": "", // read by the SDK (MACHINA_DRIVER_ENDPOINT)
}

// config is the command line of the driver.
type config struct {
	endpoint    string
	showVersion bool
	logLevel    slog.Level
	opts        inmemory.Options
	disabled    []string
	providers   []string
	faults      []string
}

// envName returns the environment variable of a flag, "" for none.
func envName(flagName string) string {
	if v, ok := envOverrides[flagName]; ok {
		return v
	}
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// listFlag collects a flag that may be repeated.
type listFlag struct{ values *[]string }

func (l listFlag) String() string {
	if l.values == nil {
		return ""
	}
	return strings.Join(*l.values, ";")
}

func (l listFlag) Set(v string) error {
	*l.values = append(*l.values, v)
	return nil
}

// parseConfig parses args (without the program name), taking flags that
// are not on the command line from getenv.
func parseConfig(fs *flag.FlagSet, args []string, getenv func(string) string) (*config, error) {
	c := &config{}
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.endpoint, "endpoint", "",
		"Driver API endpoint, unix:///path.sock or tcp://host:port for development (default from MACHINA_DRIVER_ENDPOINT, else unix:///var/run/machina/driver.sock)")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	fs.TextVar(&c.logLevel, "log-level", slog.LevelInfo, "log level: DEBUG, INFO, WARN or ERROR")
	fs.BoolVar(&c.opts.RequireInitialization, "require-initialization", false,
		"new VMs report needs_initialization until InitializeMachine ran for them")
	fs.StringVar(&c.opts.CSIDriverName, "csi-driver-name", inmemory.DefaultCSIDriverName,
		"CSI driver whose volumes GetVolumeIDs maps to their volume handles")
	fs.Var(listFlag{&c.disabled}, "disable-capability",
		"comma-separated optional capabilities to switch off: initialize, list, volumes, update (repeatable)")
	fs.Var(listFlag{&c.providers}, "provider",
		"MachineClass provider value the driver serves, repeatable or comma-separated (default inmemory)")
	fs.Var(listFlag{&c.faults}, "fault",
		"faults to inject, METHOD:KEY=VALUE,...[;METHOD:...], keys code, message, rate, seed, every, count, latency, after (repeatable)")
	fs.IntVar(&c.opts.CrashAfter, "crash-after", 0,
		fmt.Sprintf("exit with code %d when a MachineService call arrives after this many were served (0: never)", inmemory.CrashExitCode))
	fs.StringVar(&c.opts.StateFile, "state-file", "", "JSON file that keeps the VMs across restarts (default: VMs live in memory only)")

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err := applyEnv(fs, getenv); err != nil {
		return nil, err
	}
	if err := c.complete(); err != nil {
		return nil, err
	}
	return c, nil
}

// applyEnv sets each flag that is not on the command line from its
// environment variable, if that is set.
func applyEnv(fs *flag.FlagSet, getenv func(string) string) error {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		env := envName(f.Name)
		if onCommandLine[f.Name] || env == "" {
			return
		}
		if v := getenv(env); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", env, v, err))
			}
		}
	})
	return errors.Join(errs...)
}

// complete turns the list flags into options.
func (c *config) complete() error {
	for _, d := range c.disabled {
		caps, err := inmemory.ParseCapabilities(d)
		if err != nil {
			return fmt.Errorf("--disable-capability: %w", err)
		}
		c.opts.DisabledCapabilities = append(c.opts.DisabledCapabilities, caps...)
	}
	for _, p := range c.providers {
		c.opts.Providers = append(c.opts.Providers, strings.Split(p, ",")...)
	}
	c.opts.Faults = map[string]inmemory.Fault{}
	for _, f := range c.faults {
		parsed, err := inmemory.ParseFaults(f)
		if err != nil {
			return fmt.Errorf("--fault: %w", err)
		}
		for method, fault := range parsed {
			c.opts.Faults[method] = fault
		}
	}
	if c.opts.CrashAfter < 0 {
		return errors.New("--crash-after must not be negative")
	}
	return nil
}
