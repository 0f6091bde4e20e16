package driver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/healthz"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// errNotReady is returned by Ready when the driver answers but says it is
// not ready.
var errNotReady = errors.New("driver reports not ready")

// probe sends one Probe bounded by Options.ProbeTimeout. An unset ready
// field means ready, as the Driver API says.
func (c *Client) probe(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
	defer cancel()
	resp, err := c.identity.Probe(ctx, &driverv1alpha1.ProbeRequest{})
	if err != nil {
		return false, err
	}
	if r := resp.GetReady(); r != nil && !r.GetValue() {
		return false, nil
	}
	return true, nil
}

// Ready probes the driver once and returns nil when it is reachable and
// ready. It is meant for the manager's readiness check: a core whose driver
// is gone or not ready cannot make progress on machines.
func (c *Client) Ready(ctx context.Context) error {
	ready, err := c.probe(ctx)
	if err != nil {
		if problem := endpointFileProblem(c.endpoint); problem != nil {
			return fmt.Errorf("driver at %s: %w: Probe: %w", c.endpoint, problem, err)
		}
		return fmt.Errorf("driver at %s: Probe: %w", c.endpoint, err)
	}
	if !ready {
		return fmt.Errorf("driver at %s: %w", c.endpoint, errNotReady)
	}
	return nil
}

// HealthChecker returns Ready as a controller-runtime health check, e.g.
// mgr.AddReadyzCheck("driver", client.HealthChecker()).
func (c *Client) HealthChecker() healthz.Checker {
	return func(req *http.Request) error {
		return c.Ready(req.Context())
	}
}
