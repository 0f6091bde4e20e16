package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/machina-io/machina/cmd/machina-node-agent/internal/hostexec"
	"github.com/machina-io/machina/core/nodeconfig"
)

// config is the parsed command line.
type config struct {
	nodeName     string
	kubeconfig   string
	root         string
	sourceDir    string
	stateDir     string
	applyCommand string
	applyTimeout time.Duration
	maxAttempts  int
	// driftInterval is how often the files of the node's MachineConfig
	// are compared with what the agent wrote.
	driftInterval time.Duration
	// The MachineConfig side's host actions (internal/machineconfig).
	systemctl        string
	chroot           bool
	osUpdateCommand  string
	actionTimeout    time.Duration
	retryInterval    time.Duration
	maxRetryInterval time.Duration
	rebootTimeout    time.Duration
	bootIDFile       string
	fipsFile         string
	// configServer is the manager's node configuration server; "" reads
	// MachineConfigs from the API server.
	configServer   string
	configServerCA string
	healthAddr     string
	metricsAddr    string
	zap            zap.Options
	showVersion    bool
}

// parseFlags parses args into a config. On -h it prints the usage to out
// and returns flag.ErrHelp.
func parseFlags(args []string, out io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("machina-node-agent", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.nodeName, "node-name", os.Getenv("NODE_NAME"),
		"name of the Node this agent runs on; the only Node it watches and patches (default $NODE_NAME; the DaemonSet sets it from spec.nodeName)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "",
		"kubeconfig of the cluster of the Node (default $KUBECONFIG, else the in-cluster configuration)")
	fs.StringVar(&c.root, "root", "",
		"directory the target's files are copied into, e.g. / on a host or a hostPath mount (required)")
	fs.StringVar(&c.sourceDir, "source-dir", "",
		"directory holding one subdirectory per target identity: <source-dir>/<target>/ is what target <target> puts under --root (required)")
	fs.StringVar(&c.stateDir, "state-dir", "",
		"directory of the agent's on-disk record (last applied target, attempt in progress); must survive restarts of the agent (required)")
	fs.StringVar(&c.applyCommand, "apply-command", "",
		"shell command run with /bin/sh -c in --root after the files are copied, e.g. to restart a service; "+
			"$MACHINA_INPLACE_TARGET and $MACHINA_INPLACE_ROOT are set; a non-zero exit fails the update with the output's last line as reason")
	fs.DurationVar(&c.applyTimeout, "apply-timeout", 10*time.Minute, "how long --apply-command may run before the update fails")
	fs.IntVar(&c.maxAttempts, "max-attempts", 3,
		"how many attempts at one target may be interrupted (the agent crashed or was stopped while applying) before the agent reports it failed")
	fs.DurationVar(&c.driftInterval, "drift-check-interval", time.Minute,
		"how often the files and units of the node's MachineConfig are compared with what the agent wrote; a difference makes the node Degraded")
	fs.StringVar(&c.systemctl, "systemctl", "systemctl",
		"command line of systemctl, split on spaces: how the agent reaches the node's systemd for daemon-reload, reload, restart "+
			"and reboot")
	fs.BoolVar(&c.chroot, "chroot", false,
		"run systemctl, --apply-command and --os-update-command inside --root with chroot(2), as the host's own programs "+
			"(found on the host's PATH there): the DaemonSet mounts the host's / at /host and its image has no shell or systemctl")
	fs.StringVar(&c.osUpdateCommand, "os-update-command", "",
		"shell command run with /bin/sh -c to change the node's kernel type, OS image or extensions (an image-based OS's own tool, "+
			"e.g. rpm-ostree or bootc), with $MACHINA_KERNEL_TYPE, $MACHINA_OS_IMAGE_URL, $MACHINA_EXTENSIONS, "+
			"$MACHINA_BASE_OS_EXTENSIONS_IMAGE and $MACHINA_ROOT set; a reboot follows. Without it a MachineConfig that changes "+
			"them makes the node Degraded, naming the fields")
	fs.DurationVar(&c.actionTimeout, "action-timeout", 5*time.Minute, "how long one systemctl call or the OS update command may run")
	fs.DurationVar(&c.retryInterval, "retry-interval", 30*time.Second,
		"first wait before a MachineConfig the node is Degraded on is tried again; it doubles with each failure up to --max-retry-interval")
	fs.DurationVar(&c.maxRetryInterval, "max-retry-interval", 10*time.Minute, "longest wait between two tries of a Degraded MachineConfig")
	fs.DurationVar(&c.rebootTimeout, "reboot-timeout", 15*time.Minute, "how long a requested reboot may take before the node is Degraded")
	fs.StringVar(&c.bootIDFile, "boot-id-file", "/proc/sys/kernel/random/boot_id", "the kernel's boot ID: a new value means the node rebooted")
	fs.StringVar(&c.fipsFile, "fips-file", "/proc/sys/crypto/fips_enabled", "says whether the kernel runs in FIPS mode")
	fs.StringVar(&c.configServer, "config-server", "",
		"https://host:port of the manager's node configuration server (its --node-config-bind-address), which gives the agent "+
			"its own Node's rendered MachineConfigs; empty reads MachineConfigs and pools from the API server, "+
			"which the agent's RBAC must then allow")
	fs.StringVar(&c.configServerCA, "config-server-ca", nodeconfig.DefaultCAConfigMap,
		"namespace/name of the ConfigMap that holds the node configuration server's certificates, which the agent trusts")
	fs.StringVar(&c.healthAddr, "health-probe-bind-address", "0", "address of /healthz and /readyz, e.g. :8081 (0: off)")
	fs.StringVar(&c.metricsAddr, "metrics-bind-address", "0", "address of the Prometheus metrics, e.g. :8080 (0: off)")
	fs.BoolVar(&c.showVersion, "version", false, "print the version and exit")
	// Production logs: JSON, info level.
	c.zap.Development = false
	c.zap.BindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: machina-node-agent --node-name=NODE --root=DIR --source-dir=DIR --state-dir=DIR [flags]\n\n"+
			"Applies the in-place update target its Node asks for (annotation inplace.machina.io/desired) once the\n"+
			"core gives the go signal (condition InPlaceUpdate, reason ReadyForUpdate), and reports the result on\n"+
			"the Node (label node.machine.sapcloud.io/update-result). See docs/in-place-updates.md.\n"+
			"Also applies the rendered MachineConfig its Node asks for (annotation\n"+
			"machineconfiguration.openshift.io/desiredConfig): files, units, SSH keys and kernel arguments under --root,\n"+
			"activated through systemd. See\n"+
			"docs/machine-config.md.\n\n"+
			"Flags (-flag and --flag are the same):\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if c.showVersion {
		return c, nil
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var errs []error
	for _, req := range []struct{ name, value string }{
		{"node-name", c.nodeName}, {"root", c.root}, {"source-dir", c.sourceDir}, {"state-dir", c.stateDir},
	} {
		if req.value == "" {
			errs = append(errs, fmt.Errorf("--%s is required", req.name))
		}
	}
	if c.maxAttempts < 1 {
		errs = append(errs, fmt.Errorf("--max-attempts must be at least 1, got %d", c.maxAttempts))
	}
	if c.driftInterval <= 0 {
		errs = append(errs, fmt.Errorf("--drift-check-interval must be positive, got %s", c.driftInterval))
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{{"action-timeout", c.actionTimeout}, {"retry-interval", c.retryInterval}, {"max-retry-interval", c.maxRetryInterval}, {"reboot-timeout", c.rebootTimeout}} {
		if d.value <= 0 {
			errs = append(errs, fmt.Errorf("--%s must be positive, got %s", d.name, d.value))
		}
	}
	if c.configServer != "" {
		if _, err := c.configServerCAKey(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(strings.Fields(c.systemctl)) == 0 {
		errs = append(errs, errors.New("--systemctl must not be empty"))
	}
	if c.applyTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--apply-timeout must be positive, got %s", c.applyTimeout))
	}
	return c, errors.Join(errs...)
}

// host is how the agent starts the node's programs: inside --root with
// --chroot.
func (c *config) host() hostexec.Runner {
	if c.chroot {
		return hostexec.Runner{Root: c.root}
	}
	return hostexec.Runner{}
}

// configServerCAKey is the ConfigMap of --config-server-ca.
func (c *config) configServerCAKey() (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(c.configServerCA, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, fmt.Errorf("--config-server-ca %q: want namespace/name", c.configServerCA)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}
