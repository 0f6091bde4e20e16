package sdk

import (
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Applied is the UpdateMachine answer of a driver that applied the new class
// to the VM: status is the VM's status as GetMachineStatus would answer it
// now.
func Applied(status *driverv1alpha1.GetMachineStatusResponse, lastKnownState string) *driverv1alpha1.UpdateMachineResponse {
	return &driverv1alpha1.UpdateMachineResponse{
		Result:         &driverv1alpha1.UpdateMachineResponse_Applied{Applied: status},
		LastKnownState: lastKnownState,
	}
}

// NeedsNewVM is the UpdateMachine answer of a driver that cannot apply the
// new class to the running VM and left it untouched. The reason says which
// field differs, for humans; it must not hold a secret value.
func NeedsNewVM(reason string) *driverv1alpha1.UpdateMachineResponse {
	return &driverv1alpha1.UpdateMachineResponse{
		Result: &driverv1alpha1.UpdateMachineResponse_NeedsNewVm{NeedsNewVm: &driverv1alpha1.NeedsNewVM{Reason: reason}},
	}
}
