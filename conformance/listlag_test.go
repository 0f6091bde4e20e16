package conformance_test

import (
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/machina-io/machina/conformance"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// laggingDriver is refDriver behind a provider whose list API lags: a VM
// appears in ListMachines only lag after its creation, as with eventually
// consistent cloud APIs. A driver cannot list what its provider does not
// return yet, and leaving a VM out is safe (§6.5.3): this driver is
// correct.
type laggingDriver struct {
	*refDriver
	lag time.Duration

	mu      sync.Mutex
	created map[string]time.Time // by provider ID
}

func (d *laggingDriver) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	resp, err := d.refDriver.CreateMachine(ctx, req)
	if err == nil {
		d.mu.Lock()
		if _, seen := d.created[resp.GetProviderId()]; !seen {
			d.created[resp.GetProviderId()] = time.Now()
		}
		d.mu.Unlock()
	}
	return resp, err
}

func (d *laggingDriver) ListMachines(ctx context.Context, req *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	resp, err := d.refDriver.ListMachines(ctx, req)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	visible := resp.GetMachines()[:0]
	for _, m := range resp.GetMachines() {
		if time.Since(d.created[m.GetProviderId()]) >= d.lag {
			visible = append(visible, m)
		}
	}
	resp.Machines = visible
	return resp, nil
}

// TestListingLagIsNoFailure: the checks that expect a new VM in
// ListMachines wait for it (up to the List timeout) instead of judging the
// first listing.
func TestListingLagIsNoFailure(t *testing.T) {
	d := &laggingDriver{refDriver: newRefDriver(allCaps, breakage{}), lag: 700 * time.Millisecond, created: map[string]time.Time{}}
	cfg := refConfig(serveDriver(t, d.refDriver, d, nil))
	r := &conformance.Runner{Focus: regexp.MustCompile(`^(CreateMachine/idempotent|ListMachines/contains_created|Concurrency/)`)}
	rep := r.Run(context.Background(), cfg)
	for _, name := range []string{"CreateMachine/idempotent", "ListMachines/contains_created", "Concurrency/distinct_machines_in_parallel"} {
		res, ok := rep.Result(name)
		if assert.True(t, ok, "%s ran", name) {
			assert.Equal(t, conformance.StatusPassed, res.Status, "%s: %v", name, res.Failures)
		}
	}
	assert.True(t, rep.Passed(), "suite failures: %v", rep.SuiteFailures)
}
