package inmemory

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Name is the plugin name the inmemory driver reports.
const Name = "inmemory.driver.machina.io"

// DefaultCSIDriverName is the CSI driver whose volumes GetVolumeIDs maps by
// default.
const DefaultCSIDriverName = "inmemory.csi.machina.io"

// CrashExitCode is the exit code of a process that crashes on purpose
// because Options.CrashAfter was reached.
const CrashExitCode = 3

// Options configure a Driver. The zero value is a working driver with every
// capability and no faults.
type Options struct {
	// RequireInitialization makes new VMs report needs_initialization until
	// InitializeMachine has run for them (when the initialize capability is
	// enabled).
	RequireInitialization bool
	// CSIDriverName is the CSI driver whose volumes GetVolumeIDs maps;
	// DefaultCSIDriverName when empty.
	CSIDriverName string
	// Providers are the MachineClass provider values the driver lists in
	// GetPluginInfo; DefaultProviders when empty. A manager with several
	// drivers routes a class to the driver that lists its provider.
	Providers []string
	// DisabledCapabilities are optional RPCs the driver hides: they are not
	// advertised and answer UNIMPLEMENTED.
	DisabledCapabilities []driverv1alpha1.Capability_Type
	// Faults are injected from the start, keyed by RPC name (see SetFault).
	Faults map[string]Fault
	// CrashAfter, when positive, makes the driver call Crash when a
	// MachineService call arrives after CrashAfter calls were served.
	CrashAfter int
	// Crash ends the process; os.Exit(CrashExitCode) when nil. Tests that
	// run the driver in-process replace it.
	Crash func()
	// StateFile, when set, is a JSON file the VMs are loaded from at start
	// and saved to after every change, so they survive a restart.
	StateFile string
	// Logger receives the driver's own log lines; slog.Default() when nil.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.CSIDriverName == "" {
		o.CSIDriverName = DefaultCSIDriverName
	}
	if o.Crash == nil {
		o.Crash = func() { os.Exit(CrashExitCode) }
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

func (o Options) capabilityEnabled(c driverv1alpha1.Capability_Type) bool {
	return !slices.Contains(o.DisabledCapabilities, c)
}

// capabilityNames maps the short names used on the command line to
// capability types.
var capabilityNames = map[string]driverv1alpha1.Capability_Type{
	"initialize": driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
	"list":       driverv1alpha1.Capability_TYPE_LIST_MACHINES,
	"volumes":    driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
	"update":     driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
}

// ParseCapabilities parses a comma-separated list of the short capability
// names "initialize", "list", "volumes" and "update" (as taken by the flag
// --disable-capability). Empty elements are ignored.
func ParseCapabilities(s string) ([]driverv1alpha1.Capability_Type, error) {
	var out []driverv1alpha1.Capability_Type
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		c, ok := capabilityNames[strings.ToLower(name)]
		if !ok {
			return nil, fmt.Errorf("unknown capability %q (want initialize, list, volumes or update)", name)
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}
