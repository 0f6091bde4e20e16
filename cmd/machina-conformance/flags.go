package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"

	"github.com/machina-io/machina/conformance"
)

// endpointEnv is the variable drivers read their endpoint from (§2.1 of the
// Driver API); the binary reads it too, so that one variable serves both.
const endpointEnv = "MACHINA_DRIVER_ENDPOINT"

// defaultEndpoint is the drivers' default endpoint (§2.1).
const defaultEndpoint = "unix:///var/run/machina/driver.sock"

// options is the parsed command line.
type options struct {
	cfg     conformance.Config
	runner  conformance.Runner
	junit   string // --junit-report
	json    string // --json-report
	list    bool   // --list
	verbose bool
}

// files are the paths of the configuration files, loaded after parsing.
type files struct {
	machineClass, incompatibleSpec, secrets, userData, nodeTemplate, volumes string
	updatedSpec, needsNewVMSpec                                              string
}

// usageError is a command line the binary cannot run with: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// parseFlags parses args (without the program name) into options. getenv
// supplies the default endpoint. Every error it returns is a usageError,
// except flag.ErrHelp.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	o := &options{}
	var f files
	var focus, skip string
	var launch conformance.Launch
	c := &o.cfg
	fs := flag.NewFlagSet("machina-conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(fs, stderr) }

	defEndpoint := defaultEndpoint
	if e := getenv(endpointEnv); e != "" {
		defEndpoint = e
	}
	fs.StringVar(&c.Endpoint, "endpoint", defEndpoint,
		"the driver's endpoint, unix:///path/to/driver.sock or tcp://host:port (default from "+endpointEnv+")")
	fs.StringVar(&f.machineClass, "machine-class", "",
		"YAML or JSON file with the MachineClass to create VMs with: name, provider, providerSpec, nodeTemplate, or a whole MachineClass manifest (required)")
	fs.StringVar(&f.incompatibleSpec, "incompatible-provider-spec", "",
		"YAML or JSON file with a provider spec the driver must find incompatible with the class's (default: the class's spec plus one extra key)")
	fs.StringVar(&f.updatedSpec, "updated-provider-spec", "",
		"file with a provider spec the driver applies to a running VM of the class without replacing it (UpdateMachine checks; without it UpdateMachine/applies_in_place is skipped)")
	fs.StringVar(&f.needsNewVMSpec, "needs-new-vm-provider-spec", "",
		"file with a provider spec the driver cannot apply to a running VM of the class (UpdateMachine answers needs_new_vm; default: the incompatible provider spec)")
	fs.StringVar(&f.secrets, "secrets", "",
		"YAML or JSON file with the secret data sent with every call: a map of strings or a Kubernetes Secret manifest")
	fs.StringVar(&f.userData, "user-data", "", "file sent verbatim as user_data when creating VMs")
	fs.StringVar(&f.nodeTemplate, "node-template", "", "YAML or JSON file with the Machine node template: labels, annotations, taints")
	fs.StringVar(&f.volumes, "volumes", "",
		"YAML or JSON file with GetVolumeIDs fixtures: a list of {persistentVolume | name + spec, volumeID | notMine: true}")
	fs.StringVar(&c.NamePrefix, "name-prefix", conformance.DefaultNamePrefix,
		"prefix of every machine name the suite creates (a random run ID follows it); ListMachines is judged only within it")
	fs.StringVar(&c.Namespace, "namespace", conformance.DefaultNamespace, "namespace of the machines and the class")
	fs.IntVar(&c.IdempotentCount, "idempotent-count", conformance.DefaultIdempotentCount, "how often idempotent calls are repeated")
	fs.IntVar(&c.Concurrency, "concurrency", conformance.DefaultConcurrency, "how many machines are created and deleted in parallel")
	fs.DurationVar(&c.ShortDeadline, "short-deadline", conformance.DefaultShortDeadline, "deadline of the calls of the deadline checks")
	fs.DurationVar(&c.DeadlineGrace, "deadline-grace", conformance.DefaultDeadlineGrace, "how long after the short deadline an answer may still arrive")
	d := conformance.DefaultTimeouts
	t := &c.Timeouts
	fs.DurationVar(&t.Identity, "timeout-identity", d.Identity, "timeout of GetPluginInfo, GetPluginCapabilities and Probe")
	fs.DurationVar(&t.Ready, "timeout-ready", d.Ready, "how long to wait for the driver to answer and report ready")
	fs.DurationVar(&t.Create, "timeout-create", d.Create, "timeout of CreateMachine")
	fs.DurationVar(&t.Initialize, "timeout-initialize", d.Initialize, "timeout of InitializeMachine")
	fs.DurationVar(&t.Delete, "timeout-delete", d.Delete, "timeout of DeleteMachine")
	fs.DurationVar(&t.Status, "timeout-status", d.Status, "timeout of GetMachineStatus")
	fs.DurationVar(&t.List, "timeout-list", d.List, "timeout of ListMachines, and how long a check waits for a new VM to be listed")
	fs.DurationVar(&t.VolumeIDs, "timeout-volume-ids", d.VolumeIDs, "timeout of GetVolumeIDs")
	fs.StringVar(&launch.Command, "driver-command", "",
		"launcher mode: start the driver with this command (a program and its arguments; the suite appends --endpoint unix:///...) instead of connecting to --endpoint, and also run the Launcher checks of how it starts, listens and stops")
	fs.DurationVar(&launch.StopTimeout, "driver-stop-timeout", conformance.DefaultStopTimeout,
		"launcher mode: how long the driver may take to exit after SIGTERM (the pod's termination grace period)")
	fs.BoolVar(&launch.DefaultEndpoint, "driver-default-endpoint", false,
		"launcher mode: also start the driver with neither --endpoint nor "+endpointEnv+", on "+defaultEndpoint+" (only when nothing is there)")
	fs.StringVar(&focus, "focus", "", "run only the tests whose name (e.g. CreateMachine/idempotent) matches this regular expression")
	fs.StringVar(&skip, "skip", "", "leave out the tests whose name matches this regular expression")
	fs.StringVar(&o.junit, "junit-report", "", "write a JUnit XML report to this file")
	fs.StringVar(&o.json, "json-report", "", "write a JSON report to this file")
	fs.BoolVar(&o.list, "list", false, "list the tests with their sections and exit")
	fs.BoolVar(&o.verbose, "v", false, "print a line when a test starts and the log lines of every test")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected arguments: %q", fs.Args())
	}
	var err error
	if o.runner.Focus, err = compile("focus", focus); err != nil {
		return nil, err
	}
	if o.runner.Skip, err = compile("skip", skip); err != nil {
		return nil, err
	}
	o.runner.Verbose = o.verbose
	if launch.Command != "" {
		explicit := false
		fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "endpoint" })
		if explicit {
			return nil, usagef("--endpoint and --driver-command exclude each other: in launcher mode the suite picks the driver's endpoints")
		}
		c.Endpoint = ""
		c.Launch = &launch
	}
	if o.list {
		return o, nil
	}
	if err := f.load(c); err != nil {
		return nil, usageError{err}
	}
	if err := c.Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	return o, nil
}

func compile(name, expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, usagef("--%s: %v", name, err)
	}
	return re, nil
}

// load reads the configuration files into c.
func (f files) load(c *conformance.Config) error {
	if f.machineClass == "" {
		return errors.New("--machine-class is required: a file with the class (provider spec) to create VMs with")
	}
	var err error
	if c.MachineClass, err = conformance.LoadMachineClass(f.machineClass); err != nil {
		return fmt.Errorf("--machine-class: %w", err)
	}
	if f.incompatibleSpec != "" {
		if c.IncompatibleProviderSpec, err = conformance.LoadProviderSpec(f.incompatibleSpec); err != nil {
			return fmt.Errorf("--incompatible-provider-spec: %w", err)
		}
	}
	if f.updatedSpec != "" {
		if c.UpdatedProviderSpec, err = conformance.LoadProviderSpec(f.updatedSpec); err != nil {
			return fmt.Errorf("--updated-provider-spec: %w", err)
		}
	}
	if f.needsNewVMSpec != "" {
		if c.NeedsNewVMProviderSpec, err = conformance.LoadProviderSpec(f.needsNewVMSpec); err != nil {
			return fmt.Errorf("--needs-new-vm-provider-spec: %w", err)
		}
	}
	if f.secrets != "" {
		if c.Secrets, err = conformance.LoadSecrets(f.secrets); err != nil {
			return fmt.Errorf("--secrets: %w", err)
		}
	}
	if f.userData != "" {
		if c.UserData, err = conformance.LoadUserData(f.userData); err != nil {
			return fmt.Errorf("--user-data: %w", err)
		}
	}
	if f.nodeTemplate != "" {
		if c.NodeTemplate, err = conformance.LoadNodeTemplate(f.nodeTemplate); err != nil {
			return fmt.Errorf("--node-template: %w", err)
		}
	}
	if f.volumes != "" {
		if c.Volumes, err = conformance.LoadVolumeFixtures(f.volumes); err != nil {
			return fmt.Errorf("--volumes: %w", err)
		}
	}
	return nil
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprint(w, `machina-conformance checks a running machina driver against the Driver API
(docs/driver-api.md). Start the driver, then point the suite at its endpoint:

  machina-conformance --endpoint unix:///tmp/driver.sock --machine-class class.yaml [flags]

Or let the suite start the driver itself (launcher mode), which adds the
Launcher checks of how the driver starts, listens and stops (§2 of the spec):

  machina-conformance --driver-command '/path/to/driver --some-flag' --machine-class class.yaml [flags]

The suite runs the command several times, as
/bin/sh -c 'umask 022; exec env <command> "$@"', with the endpoint flag
appended (a socket of its own each time). See "Launcher mode" in
docs/conformance.md.

The suite creates VMs (names start with --name-prefix) and deletes them all at
the end, also when checks fail or on Ctrl-C. Exit code: 0 all checks passed,
1 a check failed, 2 usage error. See docs/conformance.md.

Flags:
`)
	fs.PrintDefaults()
}
