package virtualnode

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func TestUpdateMachineChangesTheNodeLabels(t *testing.T) {
	d := New(Options{Target: testConfig, Logger: quiet}) // no heartbeat needed
	t.Cleanup(func() { removeNode(t, "upd-1") })
	ctx := context.Background()
	const oldSpec = `{"capacity":{"cpu":"2"},"labels":{"team":"a","tier":"web"}}`
	const newSpec = `{"capacity":{"cpu":"2"},"labels":{"team":"b"}}`
	created, err := d.CreateMachine(ctx, createReq("upd-1", "small", oldSpec))
	require.NoError(t, err)
	node := getNode(t, "upd-1")
	assert.Equal(t, "a", node.Labels["team"], "the spec's labels are on the Node")
	uid := node.UID

	m := machine("upd-1")
	m.ProviderId = created.GetProviderId()
	req := &driverv1alpha1.UpdateMachineRequest{Machine: m, OldMachineClass: class("small", oldSpec), MachineClass: class("small", newSpec)}
	for range 2 { // the repeat answers applied and changes nothing
		resp, err := d.UpdateMachine(ctx, req)
		require.NoError(t, err)
		require.NotNil(t, resp.GetApplied(), "answer: %v", resp)
		assert.Equal(t, created.GetProviderId(), resp.GetApplied().GetProviderId())
		assert.Equal(t, "upd-1", resp.GetApplied().GetNodeName())
	}
	node = getNode(t, "upd-1")
	assert.Equal(t, uid, node.UID, "the same Node")
	assert.Equal(t, "b", node.Labels["team"])
	assert.NotContains(t, node.Labels, "tier", "a label of the old spec only is removed")
	assert.Equal(t, "upd-1", node.Labels["kubernetes.io/hostname"], "the driver's own labels stay")

	// The Node now matches the new class: a create with it returns it.
	again, err := d.CreateMachine(ctx, createReq("upd-1", "small", newSpec))
	require.NoError(t, err)
	assert.Equal(t, created.GetProviderId(), again.GetProviderId())

	// Another key cannot change: the Node is left as it is.
	before := getNode(t, "upd-1")
	refused, err := d.UpdateMachine(ctx, &driverv1alpha1.UpdateMachineRequest{
		Machine: m, OldMachineClass: class("small", newSpec), MachineClass: class("small", `{"capacity":{"cpu":"4"},"labels":{"team":"c"}}`),
	})
	require.NoError(t, err)
	require.NotNil(t, refused.GetNeedsNewVm(), "answer: %v", refused)
	assert.Contains(t, refused.GetNeedsNewVm().GetReason(), "capacity")
	after := getNode(t, "upd-1")
	assert.Equal(t, before.Labels, after.Labels)
	assert.Equal(t, before.Annotations, after.Annotations)

	// Another provider ID is not this machine's Node.
	other := machine("upd-1")
	other.ProviderId = created.GetProviderId() + "x"
	_, err = d.UpdateMachine(ctx, &driverv1alpha1.UpdateMachineRequest{Machine: other, OldMachineClass: class("small", newSpec), MachineClass: class("small", oldSpec)})
	requireCode(t, codes.NotFound, err)
}
