package sdk

import (
	"context"
	"slices"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"google.golang.org/grpc"
)

// optionalRPCs maps each optional MachineService method to the capability
// that advertises it.
var optionalRPCs = map[string]driverv1alpha1.Capability_Type{
	driverv1alpha1.MachineService_InitializeMachine_FullMethodName: driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
	driverv1alpha1.MachineService_ListMachines_FullMethodName:      driverv1alpha1.Capability_TYPE_LIST_MACHINES,
	driverv1alpha1.MachineService_GetVolumeIDs_FullMethodName:      driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
	driverv1alpha1.MachineService_UpdateMachine_FullMethodName:     driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
}

// capabilitiesOf derives the advertised capabilities from the optional
// interfaces d implements, minus the hidden ones, in ascending order.
func capabilitiesOf(d Driver, hidden map[driverv1alpha1.Capability_Type]bool) []driverv1alpha1.Capability_Type {
	var caps []driverv1alpha1.Capability_Type
	add := func(implemented bool, t driverv1alpha1.Capability_Type) {
		if implemented && !hidden[t] {
			caps = append(caps, t)
		}
	}
	_, ok := d.(Initializer)
	add(ok, driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE)
	_, ok = d.(Lister)
	add(ok, driverv1alpha1.Capability_TYPE_LIST_MACHINES)
	_, ok = d.(VolumeMapper)
	add(ok, driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS)
	_, ok = d.(Updater)
	add(ok, driverv1alpha1.Capability_TYPE_UPDATE_MACHINE)
	slices.Sort(caps)
	return caps
}

// Capabilities returns the capabilities the server advertises, in ascending
// order.
func (s *Server) Capabilities() []driverv1alpha1.Capability_Type {
	return slices.Clone(s.caps)
}

func (s *Server) hasCapability(t driverv1alpha1.Capability_Type) bool {
	return slices.Contains(s.caps, t)
}

// capabilityGate answers UNIMPLEMENTED for an optional RPC the server does
// not advertise. It runs before request validation: an RPC that is not
// served has no arguments to complain about.
func (s *Server) capabilityGate(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if t, optional := optionalRPCs[info.FullMethod]; optional && !s.hasCapability(t) {
		return nil, Unimplemented("%s is not implemented: the driver does not advertise capability %s", info.FullMethod, t)
	}
	return handler(ctx, req)
}
