package sdk

import (
	"errors"
	"fmt"
	"regexp"
)

// Info is what IdentityService.GetPluginInfo answers.
type Info struct {
	// Name is the driver's name: at most 63 characters, lower-case
	// alphanumerics, '-' and '.', starting and ending with an alphanumeric,
	// in reverse-domain style (e.g. "inmemory.driver.machina.io").
	Name string
	// Version is the driver's own semantic version, with or without a
	// leading "v" (e.g. "1.4.0", "v0.1.0-dev").
	Version string
	// Manifest holds optional facts about the build (commit, provider SDK
	// version): at most 16 entries, keys and values at most 128 bytes.
	Manifest map[string]string
	// Providers are the MachineClass provider values the driver serves
	// (e.g. "AWS"): each 1 to 63 bytes, listed once. A core with
	// several drivers routes a class to the driver that lists its
	// provider; a driver that lists none can only be a core's only driver.
	// WithProviders sets them from configuration.
	Providers []string
}

const (
	maxNameLength       = 63
	maxProviderLength   = 63
	maxManifestEntries  = 16
	maxManifestKeyValue = 128
)

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)
	// semverRE is the regular expression of semver.org 2.0.0 with an
	// optional leading "v".
	semverRE = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
		`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
		`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
)

// Validate checks Info against the naming and size rules of the Driver API.
// NewServer calls it, so a misconfigured driver fails at start-up rather
// than being rejected by the core later.
func (i Info) Validate() error {
	var errs []error
	switch {
	case i.Name == "":
		errs = append(errs, errors.New("name is required"))
	case len(i.Name) > maxNameLength:
		errs = append(errs, fmt.Errorf("name %q is longer than %d characters", i.Name, maxNameLength))
	case !nameRE.MatchString(i.Name):
		errs = append(errs, fmt.Errorf("name %q must consist of lower-case alphanumerics, '-' and '.', and start and end with an alphanumeric", i.Name))
	}
	switch {
	case i.Version == "":
		errs = append(errs, errors.New("version is required"))
	case !semverRE.MatchString(i.Version):
		errs = append(errs, fmt.Errorf("version %q is not a semantic version (e.g. 1.2.3 or v1.2.3-dev)", i.Version))
	}
	if len(i.Manifest) > maxManifestEntries {
		errs = append(errs, fmt.Errorf("manifest has %d entries, at most %d are allowed", len(i.Manifest), maxManifestEntries))
	}
	for k, v := range i.Manifest {
		if k == "" || len(k) > maxManifestKeyValue || len(v) > maxManifestKeyValue {
			errs = append(errs, fmt.Errorf("manifest entry %q: keys must be 1 to %d bytes and values at most %d bytes", k, maxManifestKeyValue, maxManifestKeyValue))
		}
	}
	seen := map[string]bool{}
	for _, p := range i.Providers {
		switch {
		case p == "" || len(p) > maxProviderLength:
			errs = append(errs, fmt.Errorf("provider %q must be 1 to %d bytes", p, maxProviderLength))
		case seen[p]:
			errs = append(errs, fmt.Errorf("provider %q is listed twice", p))
		}
		seen[p] = true
	}
	if len(errs) > 0 {
		return fmt.Errorf("invalid driver info: %w", errors.Join(errs...))
	}
	return nil
}
