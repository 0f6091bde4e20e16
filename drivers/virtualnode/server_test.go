package virtualnode

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
	"github.com/machina-io/machina/sdk/sdktest"
)

func TestServedOverASocket(t *testing.T) {
	d := startDriver(t, Options{HeartbeatInterval: time.Hour, WatchNodes: true})
	srv, err := sdk.NewServer(Info(""), d, sdk.WithLogger(quiet))
	require.NoError(t, err)
	conn := sdktest.Serve(t, srv)
	identity := driverv1alpha1.NewIdentityServiceClient(conn)
	machines := driverv1alpha1.NewMachineServiceClient(conn)

	info, err := identity.GetPluginInfo(context.Background(), &driverv1alpha1.GetPluginInfoRequest{})
	require.NoError(t, err)
	assert.Equal(t, Name, info.GetName())
	assert.Equal(t, []string{"virtualnode"}, info.GetProviders())
	caps, err := identity.GetPluginCapabilities(context.Background(), &driverv1alpha1.GetPluginCapabilitiesRequest{})
	require.NoError(t, err)
	var types []driverv1alpha1.Capability_Type
	for _, c := range caps.GetCapabilities() {
		types = append(types, c.GetType())
	}
	assert.Equal(t, []driverv1alpha1.Capability_Type{
		driverv1alpha1.Capability_TYPE_LIST_MACHINES, driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
		driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
	}, types)
	_, err = machines.InitializeMachine(context.Background(), &driverv1alpha1.InitializeMachineRequest{})
	requireCode(t, codes.Unimplemented, err)

	t.Cleanup(func() { removeNode(t, "sock-1") })
	resp, err := machines.CreateMachine(context.Background(), createReq("sock-1", "small", `{"bootDelay":"1s"}`))
	require.NoError(t, err)
	assert.Regexp(t, `^virtualnode://default/sock-1/`, resp.GetProviderId())
	eventuallyCondition(t, "sock-1", corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")
	_, err = machines.DeleteMachine(context.Background(), deleteReq(machine("sock-1")))
	require.NoError(t, err)
	_, err = machines.GetMachineStatus(context.Background(), statusReq(machine("sock-1")))
	requireCode(t, codes.NotFound, err)
}
