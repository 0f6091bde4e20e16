package inmemory

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func updateReq(m *driverv1alpha1.Machine, oldSpec, newSpec string) *driverv1alpha1.UpdateMachineRequest {
	return &driverv1alpha1.UpdateMachineRequest{Machine: m, OldMachineClass: class("small", oldSpec), MachineClass: class("small", newSpec)}
}

func TestUpdateMachineAppliesTagLikeKeys(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	const oldSpec = `{"capacity":{"cpu":"2"},"tags":{"team":"a"}}`
	const newSpec = `{"capacity":{"cpu":"2"},"tags":{"team":"b"},"labels":{"tier":"web"}}`
	created, err := d.CreateMachine(ctx, createReq("m1", "small", oldSpec))
	require.NoError(t, err)
	m := machine("m1")
	m.ProviderId = created.GetProviderId()

	for range 2 { // the second call is a repeat: applied again, no change
		resp, err := d.UpdateMachine(ctx, updateReq(m, oldSpec, newSpec))
		require.NoError(t, err)
		require.NotNil(t, resp.GetApplied(), "answer: %v", resp)
		assert.Equal(t, created.GetProviderId(), resp.GetApplied().GetProviderId())
		assert.Equal(t, "m1", resp.GetApplied().GetNodeName())
		assert.Equal(t, created.GetAddresses()[0].GetAddress(), resp.GetApplied().GetAddresses()[0].GetAddress())
	}
	vms := d.VMs()
	require.Len(t, vms, 1)
	assert.Equal(t, created.GetProviderId(), vms[0].ProviderID, "the same VM")
	assert.JSONEq(t, newSpec, string(vms[0].ProviderSpec))
	assert.Equal(t, 1, vms[0].Updates, "the repeat changed nothing")
	assert.False(t, vms[0].Updated.IsZero())

	// The VM now matches the new class: a create with it returns the VM.
	again, err := d.CreateMachine(ctx, createReq("m1", "small", newSpec))
	require.NoError(t, err)
	assert.Equal(t, created.GetProviderId(), again.GetProviderId())
}

func TestUpdateMachineNeedsANewVMForOtherKeys(t *testing.T) {
	ctx := context.Background()
	const oldSpec = `{"capacity":{"cpu":"2"},"image":"a","tags":{"team":"a"}}`
	for name, newSpec := range map[string]string{
		"capacity":            `{"capacity":{"cpu":"4"},"image":"a","tags":{"team":"a"}}`,
		"an unknown key":      `{"capacity":{"cpu":"2"},"image":"b","tags":{"team":"a"}}`,
		"tags and a key more": `{"capacity":{"cpu":"2"},"image":"a","tags":{"team":"b"},"machineType":"m5"}`,
	} {
		t.Run(name, func(t *testing.T) {
			d := New(Options{})
			created, err := d.CreateMachine(ctx, createReq("m1", "small", oldSpec))
			require.NoError(t, err)
			m := machine("m1")
			m.ProviderId = created.GetProviderId()
			before := d.VMs()

			resp, err := d.UpdateMachine(ctx, updateReq(m, oldSpec, newSpec))
			require.NoError(t, err)
			require.NotNil(t, resp.GetNeedsNewVm(), "answer: %v", resp)
			assert.Contains(t, resp.GetNeedsNewVm().GetReason(), "cannot change on a running VM")
			assert.Equal(t, before, d.VMs(), "the VM is untouched")
		})
	}
}

func TestUpdateMachineErrors(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	created, err := d.CreateMachine(ctx, createReq("m1", "small", `{}`))
	require.NoError(t, err)

	gone := machine("m2")
	gone.ProviderId = "inmemory:///default/m2/0"
	_, err = d.UpdateMachine(ctx, updateReq(gone, `{}`, `{"tags":{}}`))
	requireCode(t, codes.NotFound, err)

	other := machine("m1")
	other.ProviderId = created.GetProviderId() + "x"
	_, err = d.UpdateMachine(ctx, updateReq(other, `{}`, `{"tags":{}}`))
	requireCode(t, codes.NotFound, err) // another incarnation's VM is not this machine's

	_, err = d.UpdateMachine(ctx, updateReq(machine("m1"), `{}`, `{"tags":{}}`))
	requireCode(t, codes.InvalidArgument, err)

	m := machine("m1")
	m.ProviderId = created.GetProviderId()
	_, err = d.UpdateMachine(ctx, updateReq(m, `{}`, `{"bootDelay":"soon"}`))
	requireCode(t, codes.InvalidArgument, err)
	assert.Equal(t, 0, d.VMs()[0].Updates)
}
