package sdk

import (
	"context"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// machineService forwards MachineService calls to the driver. By the time a
// call arrives here, the interceptors have gated optional RPCs by capability
// and validated the request.
type machineService struct {
	driverv1alpha1.UnimplementedMachineServiceServer
	d Driver
}

func (m machineService) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	return m.d.CreateMachine(ctx, req)
}

func (m machineService) DeleteMachine(ctx context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	return m.d.DeleteMachine(ctx, req)
}

func (m machineService) GetMachineStatus(ctx context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	return m.d.GetMachineStatus(ctx, req)
}

// The optional RPCs are reached only when advertised (the capability gate
// runs first), and advertised implies implemented; the fallback to
// UNIMPLEMENTED only keeps each method correct on its own.

func (m machineService) InitializeMachine(ctx context.Context, req *driverv1alpha1.InitializeMachineRequest) (*driverv1alpha1.InitializeMachineResponse, error) {
	if i, ok := m.d.(Initializer); ok {
		return i.InitializeMachine(ctx, req)
	}
	return m.UnimplementedMachineServiceServer.InitializeMachine(ctx, req)
}

func (m machineService) ListMachines(ctx context.Context, req *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	if l, ok := m.d.(Lister); ok {
		return l.ListMachines(ctx, req)
	}
	return m.UnimplementedMachineServiceServer.ListMachines(ctx, req)
}

func (m machineService) GetVolumeIDs(ctx context.Context, req *driverv1alpha1.GetVolumeIDsRequest) (*driverv1alpha1.GetVolumeIDsResponse, error) {
	if v, ok := m.d.(VolumeMapper); ok {
		return v.GetVolumeIDs(ctx, req)
	}
	return m.UnimplementedMachineServiceServer.GetVolumeIDs(ctx, req)
}

func (m machineService) UpdateMachine(ctx context.Context, req *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error) {
	if u, ok := m.d.(Updater); ok {
		return u.UpdateMachine(ctx, req)
	}
	return m.UnimplementedMachineServiceServer.UpdateMachine(ctx, req)
}
