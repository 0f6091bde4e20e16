package manager

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// DriverEndpoint is one named driver of a manager with several: the name
// of --driver-endpoint name=unix:///path. The name labels the driver's
// metrics, log lines and readiness check; which MachineClass providers the
// driver serves, it says itself (GetPluginInfo's providers).
type DriverEndpoint struct {
	Name     string
	Endpoint string
}

func (e DriverEndpoint) String() string { return e.Name + "=" + e.Endpoint }

// driverEndpointsFlag is --driver-endpoint: given once without a name it
// is the one driver, which serves every provider (Options.DriverEndpoint);
// given as name=endpoint, as often as there are drivers, it is the list
// of named drivers (Options.DriverEndpoints). The first use replaces the
// default.
type driverEndpointsFlag struct {
	o   *Options
	set bool
}

func (f *driverEndpointsFlag) String() string {
	if f.o == nil {
		return ""
	}
	if len(f.o.DriverEndpoints) == 0 {
		return f.o.DriverEndpoint
	}
	parts := make([]string, 0, len(f.o.DriverEndpoints))
	for _, e := range f.o.DriverEndpoints {
		parts = append(parts, e.String())
	}
	return strings.Join(parts, ",")
}

func (f *driverEndpointsFlag) Set(v string) error {
	if !f.set {
		f.set = true
		f.o.DriverEndpoint = ""
		f.o.DriverEndpoints = nil
	}
	name, endpoint, named := splitNamedEndpoint(v)
	if !named {
		if f.o.DriverEndpoint != "" {
			return fmt.Errorf("a driver endpoint without a name can be given once; name each of several drivers (name=unix:///path)")
		}
		f.o.DriverEndpoint = v
		return nil
	}
	f.o.DriverEndpoints = append(f.o.DriverEndpoints, DriverEndpoint{Name: name, Endpoint: endpoint})
	return nil
}

// splitNamedEndpoint splits name=endpoint; an endpoint alone (its scheme
// comes before any '=') has no name.
func splitNamedEndpoint(v string) (name, endpoint string, named bool) {
	i := strings.Index(v, "=")
	if i <= 0 || strings.Contains(v[:i], ":") {
		return "", v, false
	}
	return v[:i], v[i+1:], true
}

// validateDriverEndpoints checks the driver endpoints: one without a name,
// or named ones with distinct names that are DNS-1123 labels.
func (o *Options) validateDriverEndpoints(bad func(format string, args ...any)) {
	if len(o.DriverEndpoints) == 0 {
		validateEndpoint(bad, "--driver-endpoint", o.DriverEndpoint)
		return
	}
	if o.DriverEndpoint != "" {
		bad("--driver-endpoint %q has no name: a driver without a name serves every provider and cannot run beside named drivers", o.DriverEndpoint)
	}
	names := map[string]bool{}
	for _, e := range o.DriverEndpoints {
		if msgs := validation.IsDNS1123Label(e.Name); len(msgs) > 0 {
			bad("--driver-endpoint %s: the name %q: %s", e, e.Name, strings.Join(msgs, "; "))
		}
		if names[e.Name] {
			bad("--driver-endpoint: the name %q is given twice", e.Name)
		}
		names[e.Name] = true
		validateEndpoint(bad, "--driver-endpoint "+e.Name, e.Endpoint)
	}
}

func validateEndpoint(bad func(format string, args ...any), flag, endpoint string) {
	if !strings.HasPrefix(endpoint, "unix:///") && !strings.HasPrefix(endpoint, "tcp://") {
		bad("%s %q: want unix:///absolute/path or tcp://host:port", flag, endpoint)
	}
}

// driverEndpoints lists the drivers to connect to; catchAll when there is
// one without a name.
func (o *Options) driverEndpoints() (endpoints []DriverEndpoint, catchAll bool) {
	if len(o.DriverEndpoints) == 0 {
		return []DriverEndpoint{{Endpoint: o.DriverEndpoint}}, true
	}
	return o.DriverEndpoints, false
}
