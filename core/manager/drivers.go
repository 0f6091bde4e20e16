package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/healthz"

	"github.com/machina-io/machina/core/internal/driver"
)

// connectDrivers connects to every configured driver, one after the
// other, each waiting as long as ctx allows, and builds the Set the
// controllers route through. It refuses two drivers that claim the same
// provider. On error, the drivers connected so far are closed.
func (m *Manager) connectDrivers(ctx context.Context) (*driver.Set, error) {
	endpoints, catchAll := m.opts.driverEndpoints()
	clients := make([]*driver.Client, 0, len(endpoints))
	closeAll := func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}
	for _, e := range endpoints {
		// Connect adds the driver's name to the logger.
		log := m.log.WithName("driver")
		m.log.Info("Connecting to the driver", "name", e.Name, "endpoint", e.Endpoint)
		dc, err := driver.Connect(ctx, e.Endpoint, driver.Options{
			Name:          e.Name,
			CreateTimeout: m.opts.DriverCreateTimeout,
			DeleteTimeout: m.opts.DriverDeleteTimeout,
			StatusTimeout: m.opts.DriverStatusTimeout,
			ListTimeout:   m.opts.DriverListTimeout,
			CallTimeout:   m.opts.DriverCallTimeout,
			Logger:        log,
		})
		if err != nil {
			closeAll()
			if e.Name != "" {
				return nil, fmt.Errorf("driver %s: %w", e.Name, err)
			}
			return nil, err
		}
		clients = append(clients, dc)
	}
	set, err := driver.NewSet(clients, catchAll)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("%w: %w", errDriverSet, err)
	}
	return set, nil
}

// errDriverSet marks a configuration of drivers that cannot run together.
var errDriverSet = errors.New("the drivers cannot run together")

// addDriverChecks makes the manager ready only while every driver answers
// its Probe: one check per driver, "driver" for a single unnamed driver and
// "driver-<name>" for named ones, so that /readyz?verbose names the one
// that is not ready.
func (m *Manager) addDriverChecks(set *driver.Set) error {
	_, catchAll := m.opts.driverEndpoints()
	for _, dc := range set.Drivers() {
		name := "driver"
		if !catchAll {
			name = "driver-" + dc.Name()
		}
		if err := m.base.AddReadyzCheck(name, boundedCheck(dc.HealthChecker(), driverCheckTimeout)); err != nil {
			return err
		}
	}
	return nil
}

// driverCheckTimeout bounds the readiness check of one driver: a driver
// that does not answer its Probe in time (stopped, hung, overloaded) makes
// /readyz answer not ready in time rather than after the Probe's own
// timeout (5s while connecting), longer than a kubelet's probe waits (1s
// by default). The informers' check has the same bound
// (syncCheckTimeout), so /readyz answers within a second for one driver.
const driverCheckTimeout = 500 * time.Millisecond

// boundedCheck runs check with a deadline of d on the request's context.
func boundedCheck(check healthz.Checker, d time.Duration) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), d)
		defer cancel()
		if err := check(req.WithContext(ctx)); err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("no answer within %s: %w", d, err)
			}
			return err
		}
		return nil
	}
}
