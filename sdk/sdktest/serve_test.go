package sdktest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
	"github.com/machina-io/machina/sdk/sdktest"
)

// echoDriver answers CreateMachine with a provider ID made of the name.
type echoDriver struct{}

func (echoDriver) CreateMachine(_ context.Context, r *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	return &driverv1alpha1.CreateMachineResponse{ProviderId: "echo:///" + r.GetMachine().GetName(), NodeName: r.GetMachine().GetName()}, nil
}

func (echoDriver) DeleteMachine(context.Context, *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

func (echoDriver) GetMachineStatus(context.Context, *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	return nil, sdk.NotFound("no VM")
}

func TestServeReachesTheDriverThroughTheSDK(t *testing.T) {
	srv, err := sdk.NewServer(sdk.Info{Name: "echo.driver.machina.io", Version: "v1.0.0"}, echoDriver{})
	require.NoError(t, err)
	conn := sdktest.Serve(t, srv)

	info, err := driverv1alpha1.NewIdentityServiceClient(conn).GetPluginInfo(t.Context(), &driverv1alpha1.GetPluginInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, "echo.driver.machina.io", info.GetName())

	machines := driverv1alpha1.NewMachineServiceClient(conn)
	resp, err := machines.CreateMachine(t.Context(), &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: "m1", Namespace: "default"},
		MachineClass: &driverv1alpha1.MachineClass{Name: "c", Namespace: "default", ProviderSpec: []byte(`{}`)},
	})
	require.NoError(t, err)
	assert.Equal(t, "echo:///m1", resp.GetProviderId())

	// The SDK's validation is in the path: the driver would have accepted
	// this request.
	_, err = machines.CreateMachine(t.Context(), &driverv1alpha1.CreateMachineRequest{})
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	// An optional RPC the driver does not implement is gated by the SDK.
	_, err = machines.ListMachines(t.Context(), &driverv1alpha1.ListMachinesRequest{})
	assert.Equal(t, codes.Unimplemented, status.Code(err))
}
