package driver

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// DriverInfo is what a driver said about itself in GetPluginInfo.
type DriverInfo struct {
	// Name is the driver's name, e.g. "inmemory.driver.machina.io".
	Name string
	// VendorVersion is the driver's own version.
	VendorVersion string
	// Manifest holds free-form facts about the driver's build.
	Manifest map[string]string
	// Providers are the MachineClass provider values the driver serves.
	Providers []string
}

// identity is the driver's info and capabilities as last read.
type identity struct {
	info DriverInfo
	caps map[driverv1alpha1.Capability_Type]bool
}

// driverNameRE is the Driver API's rule for plugin names.
var driverNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)

const (
	maxDriverNameLength = 63
	maxProviderLength   = 63
)

// readIdentity asks the driver for its info and capabilities. Both RPCs are
// REQUIRED, so UNIMPLEMENTED means the driver does not serve this API.
func (c *Client) readIdentity(ctx context.Context, log logr.Logger) (identity, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
	defer cancel()

	info, err := c.identity.GetPluginInfo(ctx, &driverv1alpha1.GetPluginInfoRequest{})
	if err != nil {
		return identity{}, identityError("GetPluginInfo", err)
	}
	if err := validateDriverName(info.GetName()); err != nil {
		return identity{}, err
	}
	if info.GetVendorVersion() == "" {
		return identity{}, fmt.Errorf("driver %q: GetPluginInfo: vendor_version is required", info.GetName())
	}

	if err := validateProviders(info.GetName(), info.GetProviders()); err != nil {
		return identity{}, err
	}

	capsResp, err := c.identity.GetPluginCapabilities(ctx, &driverv1alpha1.GetPluginCapabilitiesRequest{})
	if err != nil {
		return identity{}, identityError("GetPluginCapabilities", err)
	}
	return identity{
		info: DriverInfo{
			Name:          info.GetName(),
			VendorVersion: info.GetVendorVersion(),
			Manifest:      maps.Clone(info.GetManifest()),
			Providers:     slices.Clone(info.GetProviders()),
		},
		caps: parseCapabilities(capsResp, log),
	}, nil
}

func identityError(rpc string, err error) error {
	if Code(err) == codes.Unimplemented {
		return fmt.Errorf("%w (%s answered UNIMPLEMENTED)", ErrNotServed, rpc)
	}
	return fmt.Errorf("%s: %w", rpc, err)
}

func validateDriverName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("GetPluginInfo: driver name is required")
	case len(name) > maxDriverNameLength:
		return fmt.Errorf("GetPluginInfo: driver name %q is longer than %d characters", name, maxDriverNameLength)
	case !driverNameRE.MatchString(name):
		return fmt.Errorf("GetPluginInfo: driver name %q must consist of lower-case alphanumerics, '-' and '.', and start and end with an alphanumeric", name)
	}
	return nil
}

// validateProviders checks the providers a driver lists: each one
// non-empty, at most 63 bytes, listed once.
func validateProviders(driver string, providers []string) error {
	seen := map[string]bool{}
	for _, p := range providers {
		switch {
		case p == "":
			return fmt.Errorf("driver %q: GetPluginInfo: an empty provider", driver)
		case len(p) > maxProviderLength:
			return fmt.Errorf("driver %q: GetPluginInfo: provider %q is longer than %d bytes", driver, p, maxProviderLength)
		case seen[p]:
			return fmt.Errorf("driver %q: GetPluginInfo: provider %q is listed twice", driver, p)
		}
		seen[p] = true
	}
	return nil
}

// parseCapabilities keeps the capabilities this client knows. A newer
// driver may advertise values added to the API after this client was built;
// they mean nothing here, so they are logged and ignored rather than
// treated as an error.
func parseCapabilities(resp *driverv1alpha1.GetPluginCapabilitiesResponse, log logr.Logger) map[driverv1alpha1.Capability_Type]bool {
	caps := make(map[driverv1alpha1.Capability_Type]bool)
	for _, cp := range resp.GetCapabilities() {
		t := cp.GetType()
		if _, known := driverv1alpha1.Capability_Type_name[int32(t)]; !known || t == driverv1alpha1.Capability_TYPE_UNSPECIFIED {
			log.Info("Ignoring unknown driver capability", "capability", int32(t))
			continue
		}
		caps[t] = true
	}
	return caps
}

// Has reports whether the driver advertised capability t, as of the last
// time the client read the driver's capabilities (at Connect and after each
// reconnect).
func (c *Client) Has(t driverv1alpha1.Capability_Type) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.id.caps[t]
}

// Capabilities returns the driver's advertised capabilities, sorted.
func (c *Client) Capabilities() []driverv1alpha1.Capability_Type {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Sorted(maps.Keys(c.id.caps))
}

// Info returns what the driver said about itself in GetPluginInfo.
func (c *Client) Info() DriverInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	info := c.id.info
	info.Manifest = maps.Clone(info.Manifest)
	info.Providers = slices.Clone(info.Providers)
	return info
}

// Providers returns the provider values the driver listed in
// GetPluginInfo, as of the last time the client read them.
func (c *Client) Providers() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.id.info.Providers)
}

// Name is the driver's name in metrics, logs and readiness checks:
// Options.Name, or else the name the driver gave itself.
// It is fixed when Connect returns.
func (c *Client) Name() string { return c.name }

// driverName is the driver's name, used as the provider label of metrics.
func (c *Client) driverName() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.id.info.Name
}

func (c *Client) setIdentity(id identity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.id = id
}

// requireCapability refuses an optional RPC the driver did not advertise.
// The refusal is local: the Driver API says the core never calls such an
// RPC, so no request reaches the driver.
func (c *Client) requireCapability(t driverv1alpha1.Capability_Type, rpc string) error {
	if c.Has(t) {
		return nil
	}
	return unimplementedError(c.driverName(), t, rpc)
}

// capabilityNames lists caps by name, sorted, for log lines.
func capabilityNames(caps map[driverv1alpha1.Capability_Type]bool) []string {
	names := make([]string, 0, len(caps))
	for _, t := range slices.Sorted(maps.Keys(caps)) {
		names = append(names, t.String())
	}
	return names
}
