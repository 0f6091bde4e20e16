package inmemory

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func TestCreateMachineIsIdempotentByName(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()

	first, err := d.CreateMachine(ctx, createReq("m1", "small", `{"capacity":{"cpu":"2","memory":"4Gi"},"bootDelay":"1s"}`))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(first.GetProviderId(), "inmemory:///default/m1/"), first.GetProviderId())
	assert.Equal(t, "m1", first.GetNodeName())
	assert.Equal(t, stateCreated, first.GetLastKnownState())
	require.Len(t, first.GetAddresses(), 2)
	assert.Equal(t, "InternalIP", first.GetAddresses()[0].GetType())
	assert.True(t, strings.HasPrefix(first.GetAddresses()[0].GetAddress(), "10."))

	// The same object written with other key order and spacing is compatible.
	again, err := d.CreateMachine(ctx, createReq("m1", "small", `{ "bootDelay": "1s", "capacity": {"memory":"4Gi", "cpu":"2"} }`))
	require.NoError(t, err)
	assert.Equal(t, first.GetProviderId(), again.GetProviderId())

	vms := d.VMs()
	require.Len(t, vms, 1)
	assert.Equal(t, "small", vms[0].ClassName)
	assert.Equal(t, map[string]string{"cpu": "2", "memory": "4Gi"}, vms[0].Capacity)
	assert.Equal(t, "1s", vms[0].BootDelay.String())
	assert.Equal(t, 2, d.Calls(MethodCreateMachine))
}

func TestCreateMachineWithIncompatibleRequestIsAlreadyExists(t *testing.T) {
	ctx := context.Background()
	cases := map[string]*driverv1alpha1.CreateMachineRequest{
		"other provider spec": createReq("m1", "small", `{"capacity":{"cpu":"4"}}`),
		// One VM per name: a Machine of that name in another namespace
		// is refused, never given this VM (§6.1.3).
		"other namespace": {
			Machine:      &driverv1alpha1.Machine{Name: "m1", Namespace: "other"},
			MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "other", ProviderSpec: []byte(`{"capacity":{"cpu":"2"}}`)},
		},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			d := New(Options{})
			created, err := d.CreateMachine(ctx, createReq("m1", "small", `{"capacity":{"cpu":"2"}}`))
			require.NoError(t, err)
			_, err = d.CreateMachine(ctx, req)
			requireCode(t, codes.AlreadyExists, err)
			require.Len(t, d.VMs(), 1)
			assert.Equal(t, created.GetProviderId(), d.VMs()[0].ProviderID)
		})
	}
}

// TestCreateMachineWithAnotherClassNameReturnsTheVM: the class name is not
// part of a Machine's key; with the same provider spec the Machine gets the
// VM it has, which stays listed under its original class (§6.1.3, §11.8).
func TestCreateMachineWithAnotherClassNameReturnsTheVM(t *testing.T) {
	ctx := context.Background()
	d := New(Options{})
	created, err := d.CreateMachine(ctx, createReq("m1", "small", `{"capacity":{"cpu":"2"}}`))
	require.NoError(t, err)
	again, err := d.CreateMachine(ctx, createReq("m1", "renamed", `{"capacity":{"cpu":"2"}}`))
	require.NoError(t, err)
	assert.Equal(t, created.GetProviderId(), again.GetProviderId())
	require.Len(t, d.VMs(), 1)
	assert.Equal(t, "small", d.VMs()[0].ClassName)
	st, err := d.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: machine("m1"), MachineClass: class("renamed", "{}")})
	require.NoError(t, err)
	assert.Equal(t, created.GetProviderId(), st.GetProviderId())
}

// TestCreateMachineWithClassOfAnotherNamespaceIsInvalid: a Machine uses a
// class of its own namespace; nothing is created otherwise (§4.9).
func TestCreateMachineWithClassOfAnotherNamespaceIsInvalid(t *testing.T) {
	d := New(Options{})
	_, err := d.CreateMachine(context.Background(), &driverv1alpha1.CreateMachineRequest{
		Machine:      machine("m1"),
		MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "other", ProviderSpec: []byte(`{}`)},
	})
	requireCode(t, codes.InvalidArgument, err)
	assert.Contains(t, err.Error(), "machine_class.namespace")
	assert.Empty(t, d.VMs())
}

// TestOtherNamespaceNeverSeesTheVM: a VM is never reported or deleted for a
// Machine of the same name in another namespace (§6.1.3, §6.3.3).
func TestOtherNamespaceNeverSeesTheVM(t *testing.T) {
	ctx := context.Background()
	d := New(Options{})
	created, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)
	other := &driverv1alpha1.Machine{Name: "m1", Namespace: "other"}
	otherClass := &driverv1alpha1.MachineClass{Name: "small", Namespace: "other", ProviderSpec: []byte(`{}`)}
	_, err = d.GetMachineStatus(ctx, &driverv1alpha1.GetMachineStatusRequest{Machine: other, MachineClass: otherClass})
	requireCode(t, codes.NotFound, err)
	_, err = d.DeleteMachine(ctx, &driverv1alpha1.DeleteMachineRequest{Machine: other, MachineClass: otherClass})
	require.NoError(t, err)
	require.Len(t, d.VMs(), 1)
	assert.Equal(t, created.GetProviderId(), d.VMs()[0].ProviderID)
}

func TestDeleteMachineOfUnknownOrGoneVMIsOK(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()

	_, err := d.DeleteMachine(ctx, deleteReq(machine("never-created")))
	require.NoError(t, err)

	created, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)
	m := machine("m1")
	m.ProviderId = created.GetProviderId()
	_, err = d.DeleteMachine(ctx, deleteReq(m))
	require.NoError(t, err)
	assert.Empty(t, d.VMs())
	_, err = d.DeleteMachine(ctx, deleteReq(m))
	require.NoError(t, err)
}

func TestDeleteMachineLeavesAnotherIncarnationAlone(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	_, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)

	stale := machine("m1")
	stale.ProviderId = "inmemory:///default/m1/00000000"
	_, err = d.DeleteMachine(ctx, deleteReq(stale))
	require.NoError(t, err)
	require.Len(t, d.VMs(), 1, "the VM of the current incarnation must survive")
}

func TestGetMachineStatus(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()

	_, err := d.GetMachineStatus(ctx, statusReq(machine("m1")))
	requireCode(t, codes.NotFound, err)

	created, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)

	byName, err := d.GetMachineStatus(ctx, statusReq(machine("m1")))
	require.NoError(t, err)
	assert.Equal(t, created.GetProviderId(), byName.GetProviderId())
	assert.Equal(t, "m1", byName.GetNodeName())
	assert.False(t, byName.GetNeedsInitialization())
	assert.Equal(t, created.GetAddresses()[0].GetAddress(), byName.GetAddresses()[0].GetAddress())

	withID := machine("m1")
	withID.ProviderId = created.GetProviderId()
	_, err = d.GetMachineStatus(ctx, statusReq(withID))
	require.NoError(t, err)

	otherID := machine("m1")
	otherID.ProviderId = "inmemory:///default/m1/ffffffff"
	_, err = d.GetMachineStatus(ctx, statusReq(otherID))
	requireCode(t, codes.NotFound, err)

	otherNS := &driverv1alpha1.Machine{Name: "m1", Namespace: "other"}
	_, err = d.GetMachineStatus(ctx, statusReq(otherNS))
	requireCode(t, codes.NotFound, err)

	_, err = d.DeleteMachine(ctx, deleteReq(withID))
	require.NoError(t, err)
	_, err = d.GetMachineStatus(ctx, statusReq(withID))
	requireCode(t, codes.NotFound, err)
}

func TestRecreatedMachineGetsANewProviderID(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	first, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)
	_, err = d.DeleteMachine(ctx, deleteReq(machine("m1")))
	require.NoError(t, err)
	second, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)
	assert.NotEqual(t, first.GetProviderId(), second.GetProviderId())
}

func TestInitialization(t *testing.T) {
	d := New(Options{RequireInitialization: true})
	ctx := context.Background()
	created, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)

	st, err := d.GetMachineStatus(ctx, statusReq(machine("m1")))
	require.NoError(t, err)
	assert.True(t, st.GetNeedsInitialization())

	initReq := &driverv1alpha1.InitializeMachineRequest{Machine: machine("m1"), MachineClass: class("small", "{}")}
	_, err = d.InitializeMachine(ctx, initReq)
	requireCode(t, codes.InvalidArgument, err) // provider_id is required

	initReq.Machine.ProviderId = "inmemory:///default/m1/00000000"
	_, err = d.InitializeMachine(ctx, initReq)
	requireCode(t, codes.NotFound, err)

	initReq.Machine.ProviderId = created.GetProviderId()
	for range 2 { // idempotent
		resp, err := d.InitializeMachine(ctx, initReq)
		require.NoError(t, err)
		assert.Equal(t, created.GetProviderId(), resp.GetProviderId())
		assert.Equal(t, stateInitialized, resp.GetLastKnownState())
	}
	st, err = d.GetMachineStatus(ctx, statusReq(machine("m1")))
	require.NoError(t, err)
	assert.False(t, st.GetNeedsInitialization())
}

func TestInitializationIsNotRequiredWhenItsCapabilityIsDisabled(t *testing.T) {
	d := New(Options{
		RequireInitialization: true,
		DisabledCapabilities:  []driverv1alpha1.Capability_Type{driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE},
	})
	ctx := context.Background()
	_, err := d.CreateMachine(ctx, createReq("m1", "small", "{}"))
	require.NoError(t, err)
	st, err := d.GetMachineStatus(ctx, statusReq(machine("m1")))
	require.NoError(t, err)
	assert.False(t, st.GetNeedsInitialization())
}

func TestListMachinesByClass(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	ids := map[string]string{}
	for _, m := range []struct{ name, class string }{{"a", "small"}, {"b", "large"}, {"c", "small"}} {
		resp, err := d.CreateMachine(ctx, createReq(m.name, m.class, "{}"))
		require.NoError(t, err)
		ids[m.name] = resp.GetProviderId()
	}
	list, err := d.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: class("small", "{}")})
	require.NoError(t, err)
	var got []string
	for _, lm := range list.GetMachines() {
		assert.Equal(t, ids[lm.GetMachineName()], lm.GetProviderId())
		got = append(got, lm.GetMachineName())
	}
	assert.Equal(t, []string{"a", "c"}, got)

	// A class of the same name in another namespace is another class.
	other := &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: "d", Namespace: "other"},
		MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "other", ProviderSpec: []byte("{}")},
	}
	_, err = d.CreateMachine(ctx, other)
	require.NoError(t, err)
	list, err = d.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: other.GetMachineClass()})
	require.NoError(t, err)
	require.Len(t, list.GetMachines(), 1)
	assert.Equal(t, "d", list.GetMachines()[0].GetMachineName())
	list, err = d.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: class("small", "{}")})
	require.NoError(t, err)
	assert.Len(t, list.GetMachines(), 2)

	_, err = d.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{})
	requireCode(t, codes.InvalidArgument, err)
	_, err = d.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: &driverv1alpha1.MachineClass{Name: "small"}})
	requireCode(t, codes.InvalidArgument, err)
	assert.Contains(t, err.Error(), "machine_class.namespace is required")
}

func TestDisabledCapabilitiesAnswerUnimplemented(t *testing.T) {
	d := New(Options{DisabledCapabilities: []driverv1alpha1.Capability_Type{
		driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
		driverv1alpha1.Capability_TYPE_LIST_MACHINES,
		driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
		driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
	}})
	ctx := context.Background()
	assert.Empty(t, d.Capabilities())
	_, err := d.UpdateMachine(ctx, &driverv1alpha1.UpdateMachineRequest{})
	requireCode(t, codes.Unimplemented, err)
	_, err = d.InitializeMachine(ctx, &driverv1alpha1.InitializeMachineRequest{})
	requireCode(t, codes.Unimplemented, err)
	_, err = d.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{})
	requireCode(t, codes.Unimplemented, err)
	_, err = d.GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{})
	requireCode(t, codes.Unimplemented, err)
	assert.Len(t, New(Options{}).Capabilities(), 4)
}

func TestInvalidRequestsNameTheField(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	cases := map[string]struct {
		req  *driverv1alpha1.CreateMachineRequest
		want string
	}{
		"no machine":    {&driverv1alpha1.CreateMachineRequest{MachineClass: class("c", "{}")}, "machine is required"},
		"no name":       {&driverv1alpha1.CreateMachineRequest{Machine: &driverv1alpha1.Machine{Namespace: "ns"}, MachineClass: class("c", "{}")}, "machine.name is required"},
		"bad name":      {createReq("Not_A_Name", "c", "{}"), "machine.name"},
		"no namespace":  {&driverv1alpha1.CreateMachineRequest{Machine: &driverv1alpha1.Machine{Name: "m"}, MachineClass: class("c", "{}")}, "machine.namespace is required"},
		"no class":      {&driverv1alpha1.CreateMachineRequest{Machine: machine("m")}, "machine_class is required"},
		"no class name": {createReq("m", "", "{}"), "machine_class.name is required"},
		"no class namespace": {&driverv1alpha1.CreateMachineRequest{Machine: machine("m"),
			MachineClass: &driverv1alpha1.MachineClass{Name: "c", ProviderSpec: []byte("{}")}}, "machine_class.namespace is required"},
		"no provider spec":  {createReq("m", "c", ""), "machine_class.provider_spec is required"},
		"array spec":        {createReq("m", "c", "[1,2]"), "machine_class.provider_spec must be a JSON object"},
		"null spec":         {createReq("m", "c", "null"), "machine_class.provider_spec must be a JSON object"},
		"not JSON":          {createReq("m", "c", "cpu: 2"), "machine_class.provider_spec must be a JSON object"},
		"bad capacity":      {createReq("m", "c", `{"capacity":{"cpu":2}}`), "machine_class.provider_spec.capacity"},
		"bad bootDelay":     {createReq("m", "c", `{"bootDelay":"soon"}`), "machine_class.provider_spec.bootDelay"},
		"numeric bootDelay": {createReq("m", "c", `{"bootDelay":5}`), "machine_class.provider_spec.bootDelay"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := d.CreateMachine(ctx, tc.req)
			requireCode(t, codes.InvalidArgument, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	assert.Empty(t, d.VMs())

	_, err := d.CreateMachine(ctx, createReq("m", "c", `{"unknownKey":{"nested":[1,2.5e300]}}`))
	require.NoError(t, err, "unknown keys are accepted")
}

func TestErrorsDoNotEchoSecrets(t *testing.T) {
	d := New(Options{})
	ctx := context.Background()
	secret := []byte("super-secret-token")
	big := map[string][]byte{}
	for i := range 65 {
		big[string(rune('a'+i%26))+strings.Repeat("k", i)] = secret
	}
	req := createReq("m1", "small", "{}")
	req.Secrets = big
	_, err := d.CreateMachine(ctx, req)
	requireCode(t, codes.InvalidArgument, err)
	assert.NotContains(t, err.Error(), string(secret))

	req = createReq("m1", "small", "{}")
	req.UserData = append([]byte("super-secret-token"), make([]byte, 1<<20)...)
	_, err = d.CreateMachine(ctx, req)
	requireCode(t, codes.InvalidArgument, err)
	assert.NotContains(t, err.Error(), string(secret))

	req = createReq("m1", "small", "{}")
	req.Secrets = map[string][]byte{"token": secret}
	req.UserData = secret
	_, err = d.CreateMachine(ctx, req)
	require.NoError(t, err)
	req.MachineClass = class("small", `{"other":true}`)
	_, err = d.CreateMachine(ctx, req)
	requireCode(t, codes.AlreadyExists, err)
	assert.NotContains(t, err.Error(), string(secret))
}
