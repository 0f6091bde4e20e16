package inmemory

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
	"github.com/machina-io/machina/sdk/sdktest"
)

// serve serves d with the SDK's server on a real Unix socket until the test
// ends and returns a connection to it.
func serve(t *testing.T, d *Driver) *grpc.ClientConn {
	t.Helper()
	srv, err := NewServer(d, sdk.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	return sdktest.Serve(t, srv)
}

func TestServedDriverListsTheConfiguredProviders(t *testing.T) {
	conn := serve(t, New(Options{Providers: []string{"pool-a", "pool-b"}}))
	info, err := driverv1alpha1.NewIdentityServiceClient(conn).GetPluginInfo(context.Background(), &driverv1alpha1.GetPluginInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, []string{"pool-a", "pool-b"}, info.GetProviders())
}

func TestServedDriverAdvertisesAndServesEveryCapability(t *testing.T) {
	conn := serve(t, New(Options{RequireInitialization: true}))
	ctx := context.Background()
	identity := driverv1alpha1.NewIdentityServiceClient(conn)
	machines := driverv1alpha1.NewMachineServiceClient(conn)

	info, err := identity.GetPluginInfo(ctx, &driverv1alpha1.GetPluginInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, Name, info.GetName())
	assert.Equal(t, DefaultVersion, info.GetVendorVersion())
	assert.Equal(t, DefaultProviders, info.GetProviders())

	caps, err := identity.GetPluginCapabilities(ctx, &driverv1alpha1.GetPluginCapabilitiesRequest{})
	require.NoError(t, err)
	assert.ElementsMatch(t, []driverv1alpha1.Capability_Type{
		driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
		driverv1alpha1.Capability_TYPE_LIST_MACHINES,
		driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
		driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
	}, capabilityTypes(caps))

	created, err := machines.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)
	st, err := machines.GetMachineStatus(ctx, statusReq(machine("m1")))
	require.NoError(t, err)
	assert.True(t, st.GetNeedsInitialization())
	m := machine("m1")
	m.ProviderId = created.GetProviderId()
	_, err = machines.InitializeMachine(ctx, &driverv1alpha1.InitializeMachineRequest{Machine: m, MachineClass: class("small", "{}")})
	require.NoError(t, err)
	list, err := machines.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: class("small", "{}")})
	require.NoError(t, err)
	require.Len(t, list.GetMachines(), 1)
	_, err = machines.GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
		{Name: "pv", Spec: []byte(`{"hostPath":{"path":"/inmemory/pv"}}`)},
	}})
	require.NoError(t, err)
	updated, err := machines.UpdateMachine(ctx, updateReq(m, "{}", `{"tags":{"team":"a"}}`))
	require.NoError(t, err)
	assert.Equal(t, created.GetProviderId(), updated.GetApplied().GetProviderId())
}

func TestServedDriverWithDisabledCapabilitiesAnswersUnimplemented(t *testing.T) {
	d := New(Options{DisabledCapabilities: []driverv1alpha1.Capability_Type{
		driverv1alpha1.Capability_TYPE_LIST_MACHINES,
		driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
		driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
	}})
	conn := serve(t, d)
	ctx := context.Background()
	identity := driverv1alpha1.NewIdentityServiceClient(conn)
	machines := driverv1alpha1.NewMachineServiceClient(conn)

	caps, err := identity.GetPluginCapabilities(ctx, &driverv1alpha1.GetPluginCapabilitiesRequest{})
	require.NoError(t, err)
	assert.Equal(t, []driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE}, capabilityTypes(caps))

	_, err = machines.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: class("small", "{}")})
	requireCode(t, codes.Unimplemented, err)
	_, err = machines.GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{{Name: "pv"}}})
	requireCode(t, codes.Unimplemented, err)
	assert.Zero(t, d.Calls(MethodListMachines), "a hidden RPC must not reach the driver")
}

func TestServedDriverFaultsAndProbe(t *testing.T) {
	d := New(Options{})
	conn := serve(t, d)
	ctx := context.Background()
	identity := driverv1alpha1.NewIdentityServiceClient(conn)
	machines := driverv1alpha1.NewMachineServiceClient(conn)

	d.SetFault(MethodCreateMachine, Fault{Code: codes.ResourceExhausted, Count: 1})
	_, err := machines.CreateMachine(ctx, createReq("m1", "small", "{}"))
	requireCode(t, codes.ResourceExhausted, err)
	_, err = machines.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)

	// The core's deadline travels over the socket and ends a slow call.
	d.SetFault(MethodGetMachineStatus, Fault{Latency: time.Hour})
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = machines.GetMachineStatus(short, statusReq(machine("m1")))
	requireCode(t, codes.DeadlineExceeded, err)

	d.SetReady(false)
	probe, err := identity.Probe(ctx, &driverv1alpha1.ProbeRequest{})
	require.NoError(t, err)
	require.NotNil(t, probe.GetReady())
	assert.False(t, probe.GetReady().GetValue())
}

func capabilityTypes(resp *driverv1alpha1.GetPluginCapabilitiesResponse) []driverv1alpha1.Capability_Type {
	var out []driverv1alpha1.Capability_Type
	for _, c := range resp.GetCapabilities() {
		out = append(out, c.GetType())
	}
	return out
}
