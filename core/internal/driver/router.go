package driver

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Router finds the driver that serves a MachineClass: the one whose
// identity (GetPluginInfo's providers) lists the class's provider. Every
// call the core makes for a machine, a class or an orphan scan goes to the
// driver the Router picks. A *Set implements it.
type Router interface {
	// ForProvider returns the driver of a MachineClass's provider, or a
	// *NoDriverError (errors.Is(err, ErrNoDriver)) when no driver, or more
	// than one, serves it.
	ForProvider(provider string) (*Client, error)
	// Drivers lists every driver, in the order they were configured.
	Drivers() []*Client
}

// ErrNoDriver is matched (errors.Is) by every *NoDriverError.
var ErrNoDriver = errors.New("no driver for provider")

// NoDriverError says that no driver serves a provider, or that several
// claim it (a driver that restarted and now lists a provider another
// driver serves). It is the user's configuration to fix, not a driver
// failure: the machines of such a class are left alone.
type NoDriverError struct {
	// Provider is the class's provider value.
	Provider string
	// Claimants names the drivers that claim Provider when there are
	// several; empty when none does.
	Claimants []string
}

func (e *NoDriverError) Error() string {
	if len(e.Claimants) > 1 {
		return fmt.Sprintf("provider %q is claimed by several drivers (%s); the core calls none of them", e.Provider, strings.Join(e.Claimants, ", "))
	}
	return fmt.Sprintf("%s %q: no configured driver lists it in its providers", ErrNoDriver, e.Provider)
}

// Is makes errors.Is(err, ErrNoDriver) true.
func (e *NoDriverError) Is(target error) bool { return target == ErrNoDriver }

// Set is the drivers of one manager, as a Router. A Set of one driver
// configured without a name (the single --driver-endpoint form) serves
// every provider, as a manager with one driver always did; otherwise each
// provider is served by the driver that lists it.
type Set struct {
	clients  []*Client
	catchAll bool
}

var _ Router = &Set{}

// NewSet builds the Set of clients, already connected. It refuses, with an
// error naming both, two drivers that claim the same provider, and, when
// there are several drivers, one that lists no provider. catchAll makes
// the only driver serve every provider, whatever it lists.
func NewSet(clients []*Client, catchAll bool) (*Set, error) {
	if len(clients) == 0 {
		return nil, errors.New("no driver configured")
	}
	if catchAll && len(clients) != 1 {
		return nil, errors.New("a driver without a name serves every provider, and must be the only one")
	}
	names := map[string]bool{}
	owner := map[string]string{}
	for _, c := range clients {
		name := c.Name()
		if names[name] {
			return nil, fmt.Errorf("two drivers are named %q; give each --driver-endpoint its own name", name)
		}
		names[name] = true
		if catchAll {
			continue
		}
		providers := c.Providers()
		if len(providers) == 0 {
			return nil, fmt.Errorf("driver %q (%s) lists no providers in GetPluginInfo; with several drivers each must say which MachineClass providers it serves", name, c.Info().Name)
		}
		for _, p := range providers {
			if other, taken := owner[p]; taken {
				return nil, fmt.Errorf("drivers %q and %q both serve provider %q; each provider must have one driver", other, name, p)
			}
			owner[p] = name
		}
	}
	return &Set{clients: slices.Clone(clients), catchAll: catchAll}, nil
}

// ForProvider implements Router. It reads the providers each driver listed
// when it last answered GetPluginInfo (at start and after each reconnect),
// so a driver that restarts serving other providers is routed to by what
// it says now.
func (s *Set) ForProvider(provider string) (*Client, error) {
	if s.catchAll {
		return s.clients[0], nil
	}
	var found *Client
	var claimants []string
	for _, c := range s.clients {
		if slices.Contains(c.Providers(), provider) {
			found = c
			claimants = append(claimants, c.Name())
		}
	}
	if len(claimants) != 1 {
		return nil, &NoDriverError{Provider: provider, Claimants: claimants}
	}
	return found, nil
}

// Drivers implements Router.
func (s *Set) Drivers() []*Client { return slices.Clone(s.clients) }

// Close closes every client of the set.
func (s *Set) Close() error {
	var errs []error
	for _, c := range s.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
