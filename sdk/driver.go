package sdk

import (
	"context"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Driver is implemented by every driver: the REQUIRED MachineService RPCs.
//
// The SDK validates each request before it reaches the driver (required
// fields, naming rules, size limits; see the Driver API specification), so a
// method can rely on req.Machine and req.MachineClass being set and on
// MachineClass.ProviderSpec being a JSON object. Methods return errors built
// with google.golang.org/grpc/status (or this package's helpers such as
// NotFound); an error message must never contain a secret value.
type Driver interface {
	// CreateMachine creates the VM for req.Machine, or returns the existing
	// one: it is idempotent on Machine.name. It returns once the VM exists
	// at the provider, without waiting for it to boot.
	CreateMachine(context.Context, *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error)
	// DeleteMachine deletes the VM of req.Machine. A VM that is already gone
	// is not an error.
	DeleteMachine(context.Context, *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error)
	// GetMachineStatus looks the VM up by Machine.name (and provider_id when
	// set) and answers NOT_FOUND when there is none.
	GetMachineStatus(context.Context, *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error)
}

// Initializer is implemented by drivers that complete the set-up of a VM
// after its creation. Implementing it advertises
// Capability.TYPE_INITIALIZE_MACHINE.
type Initializer interface {
	InitializeMachine(context.Context, *driverv1alpha1.InitializeMachineRequest) (*driverv1alpha1.InitializeMachineResponse, error)
}

// Lister is implemented by drivers that can list the VMs of a machine class
// (which enables orphan VM collection in the core). Implementing it
// advertises Capability.TYPE_LIST_MACHINES.
type Lister interface {
	ListMachines(context.Context, *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error)
}

// VolumeMapper is implemented by drivers that map persistent volumes to the
// provider's volume IDs. Implementing it advertises
// Capability.TYPE_GET_VOLUME_IDS.
type VolumeMapper interface {
	GetVolumeIDs(context.Context, *driverv1alpha1.GetVolumeIDsRequest) (*driverv1alpha1.GetVolumeIDsResponse, error)
}

// Updater is implemented by drivers that can apply a changed MachineClass to
// a running VM. Implementing it advertises Capability.TYPE_UPDATE_MACHINE.
//
// UpdateMachine compares req.OldMachineClass (what the VM was created or
// last updated with) with req.MachineClass. When every difference can be
// applied to the running VM, it applies them and answers Applied with the
// VM's status, as GetMachineStatus would answer it. Otherwise it changes
// nothing and answers NeedsNewVM with a reason (see the helpers Applied and
// NeedsNewVM). It is idempotent: a VM that already matches the new class is
// answered Applied.
type Updater interface {
	UpdateMachine(context.Context, *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error)
}

// Prober is implemented by drivers that are not always ready to serve, for
// example while they authenticate to their cloud. Without it, Probe answers
// ready. A non-nil error is returned to the caller as the Probe's error.
type Prober interface {
	Probe(context.Context) (ready bool, err error)
}
