package driver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func TestDriverRestart(t *testing.T) {
	path := socketPath(t)
	first := newTestDriver(driverv1alpha1.Capability_TYPE_LIST_MACHINES)
	stopFirst := serve(t, path, first)
	logs := &logBuffer{}
	c := connect(t, path, testOptions(logs))
	require.True(t, c.Has(driverv1alpha1.Capability_TYPE_LIST_MACHINES))
	require.False(t, c.Has(driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS))

	statusReq := &driverv1alpha1.GetMachineStatusRequest{Machine: testMachine("m1"), MachineClass: testClass()}
	_, err := c.GetMachineStatus(context.Background(), statusReq)
	require.NoError(t, err)

	// The driver goes away: calls fail with UNAVAILABLE, promptly.
	stopFirst()
	for range 3 {
		start := time.Now()
		_, err = c.GetMachineStatus(context.Background(), statusReq)
		require.Error(t, err)
		assert.Equal(t, codes.Unavailable, Code(err), "error: %v", err)
		assert.True(t, IsTransient(Code(err)))
		assert.Less(t, time.Since(start), 5*time.Second)
	}
	require.Eventually(t, func() bool { return logs.contains("Lost connection to driver") }, 10*time.Second, 10*time.Millisecond)

	// A new version of the driver comes up on the same socket with another
	// capability set.
	second := newTestDriver(driverv1alpha1.Capability_TYPE_LIST_MACHINES, driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS)
	second.version = "v2.0.0"
	serve(t, path, second)

	require.Eventually(t, func() bool {
		_, err := c.GetMachineStatus(context.Background(), statusReq)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "calls must succeed again on the same Client")
	assert.GreaterOrEqual(t, second.callCount("GetMachineStatus"), 1)

	require.Eventually(t, func() bool { return c.Has(driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS) }, 10*time.Second, 10*time.Millisecond,
		"capabilities must be read again after the reconnect")
	assert.Equal(t, "v2.0.0", c.Info().VendorVersion)
	assert.True(t, logs.contains("Reconnected to driver"))
	assert.True(t, logs.hasLine(`"msg"="Driver changed"`, `"oldVersion"="v1.0.0"`, `"version"="v2.0.0"`), logs.String())

	_, err = c.GetVolumeIDs(context.Background(), &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{{Name: "pv"}}})
	require.NoError(t, err)
	assert.Equal(t, 1, second.callCount("GetVolumeIDs"))
}

func TestCapabilityLossAfterRestart(t *testing.T) {
	path := socketPath(t)
	stopFirst := serve(t, path, newTestDriver(driverv1alpha1.Capability_TYPE_LIST_MACHINES))
	c := connect(t, path, testOptions(&logBuffer{}))
	require.True(t, c.Has(driverv1alpha1.Capability_TYPE_LIST_MACHINES))

	stopFirst()
	second := newTestDriver()
	serve(t, path, second)

	require.Eventually(t, func() bool { return !c.Has(driverv1alpha1.Capability_TYPE_LIST_MACHINES) }, 10*time.Second, 10*time.Millisecond)
	_, err := c.ListMachines(context.Background(), &driverv1alpha1.ListMachinesRequest{MachineClass: testClass()})
	assert.Equal(t, codes.Unimplemented, Code(err))
	assert.Zero(t, second.callCount("ListMachines"))
}

func TestCloseStopsTheClient(t *testing.T) {
	path := socketPath(t)
	serve(t, path, newTestDriver())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Connect(ctx, "unix://"+path, testOptions(&logBuffer{}))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	_, err = c.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: testMachine("m1"), MachineClass: testClass()})
	assert.Equal(t, codes.Canceled, Code(err))
}
