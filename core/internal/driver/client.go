package driver

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Client is the core's connection to one driver. It is safe for concurrent
// use. Create it with Connect and release it with Close.
type Client struct {
	endpoint string
	name     string
	opts     Options
	conn     *grpc.ClientConn
	identity driverv1alpha1.IdentityServiceClient
	machine  driverv1alpha1.MachineServiceClient
	// metrics are the driver's collectors: unregistered ones until Connect
	// knows the driver's name, then those registered with its label.
	metrics atomic.Pointer[clientMetrics]
	locks   *machineLocks

	mu sync.RWMutex
	id identity

	stopWatch context.CancelFunc
	watchDone chan struct{}
}

// Endpoint returns the endpoint the client dialled.
func (c *Client) Endpoint() string { return c.endpoint }

// Close stops watching the connection and closes it. Calls in flight fail
// with CANCELLED.
func (c *Client) Close() error {
	c.stopWatch()
	<-c.watchDone
	return c.conn.Close()
}

// CreateMachine creates the VM of a machine, or returns the one that
// already exists. Bounded by Options.CreateTimeout; a DEADLINE_EXCEEDED
// means the VM may exist, and the call is to be repeated with the same
// machine name.
func (c *Client) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	return machineCall(ctx, c, req.GetMachine(), c.opts.CreateTimeout, func(ctx context.Context) (*driverv1alpha1.CreateMachineResponse, error) {
		return c.machine.CreateMachine(ctx, req)
	})
}

// InitializeMachine completes the set-up of a VM. It answers UNIMPLEMENTED,
// without calling the driver, unless the driver advertised
// TYPE_INITIALIZE_MACHINE. Bounded by Options.CallTimeout.
func (c *Client) InitializeMachine(ctx context.Context, req *driverv1alpha1.InitializeMachineRequest) (*driverv1alpha1.InitializeMachineResponse, error) {
	if err := c.requireCapability(driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE, "InitializeMachine"); err != nil {
		return nil, err
	}
	return machineCall(ctx, c, req.GetMachine(), c.opts.CallTimeout, func(ctx context.Context) (*driverv1alpha1.InitializeMachineResponse, error) {
		return c.machine.InitializeMachine(ctx, req)
	})
}

// DeleteMachine deletes the VM of a machine; a VM that is already gone is
// OK. Bounded by Options.DeleteTimeout.
func (c *Client) DeleteMachine(ctx context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	return machineCall(ctx, c, req.GetMachine(), c.opts.DeleteTimeout, func(ctx context.Context) (*driverv1alpha1.DeleteMachineResponse, error) {
		return c.machine.DeleteMachine(ctx, req)
	})
}

// GetMachineStatus looks up the VM of a machine; NOT_FOUND when there is
// none. Bounded by Options.StatusTimeout.
func (c *Client) GetMachineStatus(ctx context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	return machineCall(ctx, c, req.GetMachine(), c.opts.StatusTimeout, func(ctx context.Context) (*driverv1alpha1.GetMachineStatusResponse, error) {
		return c.machine.GetMachineStatus(ctx, req)
	})
}

// ListMachines lists the VMs of a machine class. It answers UNIMPLEMENTED,
// without calling the driver, unless the driver advertised
// TYPE_LIST_MACHINES. Not serialised with per-machine calls: it is about a
// class, not a machine. Bounded by Options.ListTimeout.
func (c *Client) ListMachines(ctx context.Context, req *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	if err := c.requireCapability(driverv1alpha1.Capability_TYPE_LIST_MACHINES, "ListMachines"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ListTimeout)
	defer cancel()
	return c.machine.ListMachines(ctx, req)
}

// GetVolumeIDs maps persistent volumes to provider volume IDs. It answers
// UNIMPLEMENTED, without calling the driver, unless the driver advertised
// TYPE_GET_VOLUME_IDS. Not serialised with per-machine calls. Bounded by
// Options.CallTimeout.
func (c *Client) GetVolumeIDs(ctx context.Context, req *driverv1alpha1.GetVolumeIDsRequest) (*driverv1alpha1.GetVolumeIDsResponse, error) {
	if err := c.requireCapability(driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS, "GetVolumeIDs"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.CallTimeout)
	defer cancel()
	return c.machine.GetVolumeIDs(ctx, req)
}

// UpdateMachine applies a changed class to the VM of a machine, or learns
// that it needs a new VM. It answers UNIMPLEMENTED, without calling the
// driver, unless the driver advertised TYPE_UPDATE_MACHINE. Serialised with
// the machine's other calls; bounded by Options.CallTimeout.
func (c *Client) UpdateMachine(ctx context.Context, req *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error) {
	if err := c.requireCapability(driverv1alpha1.Capability_TYPE_UPDATE_MACHINE, "UpdateMachine"); err != nil {
		return nil, err
	}
	return machineCall(ctx, c, req.GetMachine(), c.opts.CallTimeout, func(ctx context.Context) (*driverv1alpha1.UpdateMachineResponse, error) {
		return c.machine.UpdateMachine(ctx, req)
	})
}

// machineCall runs call while holding the lock of machine m, with its own
// timeout. The timeout starts once the lock is held, so a call queued
// behind a slow create of the same machine is not charged for the wait;
// the wait itself is bounded by ctx.
func machineCall[R any](ctx context.Context, c *Client, m *driverv1alpha1.Machine, timeout time.Duration, call func(context.Context) (R, error)) (R, error) {
	unlock, err := c.locks.lock(ctx, machineKey(m))
	if err != nil {
		var zero R
		return zero, contextError(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return call(ctx)
}
