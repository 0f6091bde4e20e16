package inmemory

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStateFileKeepsVMsAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	ctx := context.Background()

	first := New(Options{StateFile: path, RequireInitialization: true})
	a, err := first.CreateMachine(ctx, createReq("a", "small", `{"capacity":{"cpu":"1"}}`))
	require.NoError(t, err)
	_, err = first.CreateMachine(ctx, createReq("b", "small", "{}"))
	require.NoError(t, err)
	_, err = first.DeleteMachine(ctx, deleteReq(machine("b")))
	require.NoError(t, err)

	second, err := Open(Options{StateFile: path})
	require.NoError(t, err)
	assert.Equal(t, first.VMs(), second.VMs())
	st, err := second.GetMachineStatus(ctx, statusReq(machine("a")))
	require.NoError(t, err)
	assert.Equal(t, a.GetProviderId(), st.GetProviderId())
	assert.True(t, st.GetNeedsInitialization())
}

func TestOpenWithoutStateFileStartsEmpty(t *testing.T) {
	d, err := Open(Options{StateFile: filepath.Join(t.TempDir(), "absent.json")})
	require.NoError(t, err)
	assert.Empty(t, d.VMs())
}
