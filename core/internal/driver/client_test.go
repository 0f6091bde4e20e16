package driver

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func TestRequiredCallsReachDriver(t *testing.T) {
	path := socketPath(t)
	d := newTestDriver()
	serve(t, path, d)
	c := connect(t, path, testOptions(&logBuffer{}))
	ctx := context.Background()

	created, err := c.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	require.NoError(t, err)
	assert.Equal(t, "test:///m1", created.GetProviderId())
	st, err := c.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	require.NoError(t, err)
	assert.Equal(t, "m1", st.GetNodeName())
	_, err = c.DeleteMachine(ctx, &driverv1alpha1.DeleteMachineRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	require.NoError(t, err)

	for _, rpc := range []string{"CreateMachine", "GetMachineStatus", "DeleteMachine"} {
		assert.Equal(t, 1, d.callCount(rpc), rpc)
	}
}

func TestDriverErrorCodesPassThrough(t *testing.T) {
	path := socketPath(t)
	d := newTestDriver()
	d.onMachineCall = func(_ context.Context, rpc string, m *driverv1alpha1.Machine) error {
		return status.Error(codes.ResourceExhausted, "quota exceeded for "+m.GetName())
	}
	serve(t, path, d)
	c := connect(t, path, testOptions(&logBuffer{}))

	_, err := c.CreateMachine(context.Background(), &driverv1alpha1.CreateMachineRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	require.Error(t, err)
	assert.Equal(t, codes.ResourceExhausted, Code(err))
	assert.Equal(t, "quota exceeded for m1", status.Convert(err).Message())
}

func TestCapabilityGating(t *testing.T) {
	ctx := context.Background()
	initReq := &driverv1alpha1.InitializeMachineRequest{Machine: testMachine("m1"), MachineClass: testClass()}
	listReq := &driverv1alpha1.ListMachinesRequest{MachineClass: testClass()}
	volReq := &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{{Name: "pv1", Spec: []byte(`{}`)}}}
	updateReq := &driverv1alpha1.UpdateMachineRequest{Machine: testMachine("m1"), OldMachineClass: testClass(), MachineClass: testClass()}

	t.Run("unadvertised RPCs are refused locally", func(t *testing.T) {
		path := socketPath(t)
		d := newTestDriver() // implements all RPCs, advertises none
		serve(t, path, d)
		c := connect(t, path, testOptions(&logBuffer{}))

		assert.Empty(t, c.Capabilities())
		for _, cp := range []driverv1alpha1.Capability_Type{
			driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
			driverv1alpha1.Capability_TYPE_LIST_MACHINES,
			driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
			driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
		} {
			assert.False(t, c.Has(cp), cp.String())
		}

		_, err := c.InitializeMachine(ctx, initReq)
		assert.Equal(t, codes.Unimplemented, Code(err))
		assert.Contains(t, err.Error(), "TYPE_INITIALIZE_MACHINE")
		_, err = c.ListMachines(ctx, listReq)
		assert.Equal(t, codes.Unimplemented, Code(err))
		assert.Contains(t, err.Error(), "TYPE_LIST_MACHINES")
		_, err = c.GetVolumeIDs(ctx, volReq)
		assert.Equal(t, codes.Unimplemented, Code(err))
		assert.Contains(t, err.Error(), "TYPE_GET_VOLUME_IDS")
		_, err = c.UpdateMachine(ctx, updateReq)
		assert.Equal(t, codes.Unimplemented, Code(err))
		assert.Contains(t, err.Error(), "TYPE_UPDATE_MACHINE")

		for _, rpc := range []string{"InitializeMachine", "ListMachines", "GetVolumeIDs", "UpdateMachine"} {
			assert.Zero(t, d.callCount(rpc), "%s must not reach the driver", rpc)
		}
	})

	t.Run("advertised RPCs reach the driver", func(t *testing.T) {
		path := socketPath(t)
		d := newTestDriver(
			driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
			driverv1alpha1.Capability_TYPE_LIST_MACHINES,
			driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
			driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
		)
		serve(t, path, d)
		c := connect(t, path, testOptions(&logBuffer{}))

		assert.Equal(t, []driverv1alpha1.Capability_Type{
			driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
			driverv1alpha1.Capability_TYPE_LIST_MACHINES,
			driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
			driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
		}, c.Capabilities())
		_, err := c.InitializeMachine(ctx, initReq)
		require.NoError(t, err)
		_, err = c.ListMachines(ctx, listReq)
		require.NoError(t, err)
		_, err = c.GetVolumeIDs(ctx, volReq)
		require.NoError(t, err)
		_, err = c.UpdateMachine(ctx, updateReq)
		require.NoError(t, err)
		for _, rpc := range []string{"InitializeMachine", "ListMachines", "GetVolumeIDs", "UpdateMachine"} {
			assert.Equal(t, 1, d.callCount(rpc), rpc)
		}
	})
}

func TestPerCallTimeout(t *testing.T) {
	path := socketPath(t)
	d := newTestDriver()
	driverSawDeadline := make(chan bool, 1)
	d.onMachineCall = func(ctx context.Context, _ string, _ *driverv1alpha1.Machine) error {
		// A driver that hangs until the core gives up.
		<-ctx.Done()
		_, ok := ctx.Deadline()
		driverSawDeadline <- ok
		return ctx.Err()
	}
	serve(t, path, d)
	opts := testOptions(&logBuffer{})
	const timeout = 300 * time.Millisecond
	opts.StatusTimeout = timeout
	c := connect(t, path, opts)

	start := time.Now()
	_, err := c.GetMachineStatus(context.Background(), &driverv1alpha1.GetMachineStatusRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	elapsed := time.Since(start)

	require.Error(t, err)
	assert.Equal(t, codes.DeadlineExceeded, Code(err))
	assert.GreaterOrEqual(t, elapsed, timeout)
	assert.Less(t, elapsed, timeout+3*time.Second)
	assert.True(t, <-driverSawDeadline, "the deadline must be propagated to the driver")
}

func TestEachCallKindHasItsOwnTimeout(t *testing.T) {
	path := socketPath(t)
	d := newTestDriver(
		driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
		driverv1alpha1.Capability_TYPE_LIST_MACHINES,
		driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
	)
	serve(t, path, d)
	opts := testOptions(&logBuffer{})
	opts.CreateTimeout = 11 * time.Minute
	opts.DeleteTimeout = 12 * time.Minute
	opts.StatusTimeout = 13 * time.Minute
	opts.ListTimeout = 14 * time.Minute
	opts.CallTimeout = 15 * time.Minute
	c := connect(t, path, opts)
	ctx := context.Background()
	m, class := testMachine("m1"), testClass()

	_, err := c.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{Machine: m, MachineClass: class})
	require.NoError(t, err)
	_, err = c.DeleteMachine(ctx, &driverv1alpha1.DeleteMachineRequest{Machine: m, MachineClass: class})
	require.NoError(t, err)
	_, err = c.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: m, MachineClass: class})
	require.NoError(t, err)
	_, err = c.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: class})
	require.NoError(t, err)
	_, err = c.InitializeMachine(ctx, &driverv1alpha1.InitializeMachineRequest{Machine: m, MachineClass: class})
	require.NoError(t, err)
	_, err = c.GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{{Name: "pv"}}})
	require.NoError(t, err)

	for rpc, want := range map[string]time.Duration{
		"CreateMachine":     opts.CreateTimeout,
		"DeleteMachine":     opts.DeleteTimeout,
		"GetMachineStatus":  opts.StatusTimeout,
		"ListMachines":      opts.ListTimeout,
		"InitializeMachine": opts.CallTimeout,
		"GetVolumeIDs":      opts.CallTimeout,
		"Probe":             defaultProbeTimeout,
	} {
		got := d.deadlineOf(rpc)
		assert.LessOrEqual(t, got, want, rpc)
		assert.Greater(t, got, want-30*time.Second, rpc)
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := Options{CreateTimeout: time.Second}.withDefaults()
	assert.Equal(t, time.Second, o.CreateTimeout, "a set value is kept")
	assert.Equal(t, 5*time.Minute, o.DeleteTimeout)
	assert.Equal(t, time.Minute, o.StatusTimeout)
	assert.Equal(t, 2*time.Minute, o.ListTimeout)
	assert.Equal(t, time.Minute, o.CallTimeout)
	assert.NotNil(t, o.Logger.GetSink())
	assert.NotNil(t, o.Registerer)
}

// blockingDriver returns a driver whose machine calls block until the test
// releases them, and the channel that releases one call per value sent.
func blockingDriver() (*testDriver, chan struct{}) {
	d := newTestDriver()
	release := make(chan struct{})
	d.onMachineCall = func(ctx context.Context, _ string, _ *driverv1alpha1.Machine) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return d, release
}

func TestPerMachineLock(t *testing.T) {
	path := socketPath(t)
	d, release := blockingDriver()
	serve(t, path, d)
	c := connect(t, path, testOptions(&logBuffer{}))

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	call := func(name string, f func(context.Context, *driverv1alpha1.Machine) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- f(context.Background(), testMachine(name))
		}()
	}
	create := func(ctx context.Context, m *driverv1alpha1.Machine) error {
		_, err := c.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{Machine: m, MachineClass: testClass()})
		return err
	}
	status := func(ctx context.Context, m *driverv1alpha1.Machine) error {
		_, err := c.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: m, MachineClass: testClass()})
		return err
	}

	// First call for m1 reaches the driver and blocks there.
	call("m1", create)
	require.Eventually(t, func() bool { return d.inFlightFor("m1") == 1 }, 10*time.Second, 5*time.Millisecond)

	// A second call for m1 must wait in the client, not reach the driver.
	call("m1", status)
	require.Eventually(t, func() bool { return c.locks.users("default/m1") == 2 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1, d.inFlightFor("m1"))
	assert.Zero(t, d.callCount("GetMachineStatus"))

	// A call for m2 is not held up by m1.
	call("m2", status)
	require.Eventually(t, func() bool { return d.inFlightFor("m2") == 1 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1, d.inFlightFor("m1"))

	// Release the three calls one by one; each release lets the next in.
	for range 3 {
		release <- struct{}{}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 1, d.maxInFlightFor("m1"), "two calls for one machine overlapped")
	assert.Equal(t, 2, d.callCount("GetMachineStatus"))
	assert.Zero(t, c.locks.users("default/m1"), "lock entries must be dropped when unused")
	assert.Zero(t, c.locks.users("default/m2"))
}

func TestLockWaitEndsWithCallerContext(t *testing.T) {
	path := socketPath(t)
	d, release := blockingDriver()
	serve(t, path, d)
	c := connect(t, path, testOptions(&logBuffer{}))

	firstDone := make(chan error, 1)
	go func() {
		_, err := c.DeleteMachine(context.Background(), &driverv1alpha1.DeleteMachineRequest{Machine: testMachine("m1"), MachineClass: testClass()})
		firstDone <- err
	}()
	require.Eventually(t, func() bool { return d.inFlightFor("m1") == 1 }, 10*time.Second, 5*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	assert.Equal(t, codes.DeadlineExceeded, Code(err))
	_, isStatus := status.FromError(err)
	assert.True(t, isStatus, "a lock wait that ends must still yield a gRPC status error")
	assert.Zero(t, d.callCount("GetMachineStatus"))

	release <- struct{}{}
	require.NoError(t, <-firstDone)
}

func TestListAndVolumeCallsAreNotSerialisedWithMachineCalls(t *testing.T) {
	path := socketPath(t)
	d, release := blockingDriver()
	d.caps = []driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_LIST_MACHINES, driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS}
	serve(t, path, d)
	c := connect(t, path, testOptions(&logBuffer{}))

	done := make(chan error, 1)
	go func() {
		_, err := c.CreateMachine(context.Background(), &driverv1alpha1.CreateMachineRequest{Machine: testMachine("m1"), MachineClass: testClass()})
		done <- err
	}()
	require.Eventually(t, func() bool { return d.inFlightFor("m1") == 1 }, 10*time.Second, 5*time.Millisecond)

	// While a machine call is in flight, class-wide calls go through.
	_, err := c.ListMachines(context.Background(), &driverv1alpha1.ListMachinesRequest{MachineClass: testClass()})
	require.NoError(t, err)
	_, err = c.GetVolumeIDs(context.Background(), &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{{Name: "pv"}}})
	require.NoError(t, err)

	release <- struct{}{}
	require.NoError(t, <-done)
}

func TestMessageSizeLimits(t *testing.T) {
	path := socketPath(t)
	d := newTestDriver(driverv1alpha1.Capability_TYPE_LIST_MACHINES)
	serve(t, path, d)
	c := connect(t, path, testOptions(&logBuffer{}))
	ctx := context.Background()

	// Requests are capped at 4 MiB, refused before they are sent.
	_, err := c.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{
		Machine: testMachine("m1"), MachineClass: testClass(), UserData: make([]byte, maxSendMessageSize+1),
	})
	assert.Equal(t, codes.ResourceExhausted, Code(err))
	assert.Zero(t, d.callCount("CreateMachine"))

	// Responses up to 16 MiB are accepted: here about 8 MiB.
	listed := listedMachines(8 << 20)
	d.mu.Lock()
	d.listResponse = listed
	d.mu.Unlock()
	resp, err := c.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: testClass()})
	require.NoError(t, err)
	assert.Len(t, resp.GetMachines(), len(listed.GetMachines()))

	// Beyond 16 MiB the client refuses the response.
	d.mu.Lock()
	d.listResponse = listedMachines(maxReceiveMessageSize + 1)
	d.mu.Unlock()
	_, err = c.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: testClass()})
	assert.Equal(t, codes.ResourceExhausted, Code(err))
}

// listedMachines returns a ListMachines answer of at least size bytes.
func listedMachines(size int) *driverv1alpha1.ListMachinesResponse {
	resp := &driverv1alpha1.ListMachinesResponse{}
	id := strings.Repeat("x", 1000)
	for n := 0; n < size; n += len(id) {
		resp.Machines = append(resp.Machines, &driverv1alpha1.ListedMachine{ProviderId: id, MachineName: "m"})
	}
	return resp
}
