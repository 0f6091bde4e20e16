package inmemory

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"maps"
	"net/netip"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Values of VM.LastKnownState.
const (
	stateCreated     = "Created"
	stateInitialized = "Initialized"
)

// CreateMachine creates the VM of a machine, or returns the VM that exists
// for its name when the request is compatible with it.
func (d *Driver) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	var resp *driverv1alpha1.CreateMachineResponse
	err := d.serve(ctx, MethodCreateMachine, req.GetMachine().GetName(), func() (err error) {
		resp, err = d.createMachine(req)
		return err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (d *Driver) createMachine(req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	m, class := req.GetMachine(), req.GetMachineClass()
	if err := checkMachineAndClass(m, class); err != nil {
		return nil, err
	}
	if err := checkSameNamespace(m, class); err != nil {
		return nil, err
	}
	spec, err := parseProviderSpec(class.GetProviderSpec())
	if err != nil {
		return nil, err
	}
	if err := checkSecrets(req.GetSecrets(), req.GetUserData()); err != nil {
		return nil, err
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	if vm, ok := d.vms[m.GetName()]; ok {
		if diff := incompatibility(vm, m, spec); diff != "" {
			return nil, status.Errorf(codes.AlreadyExists,
				"machine %q already has VM %s with %s", m.GetName(), vm.ProviderID, diff)
		}
		return createResponse(vm), nil
	}
	vm := &VM{
		Name:                m.GetName(),
		Namespace:           m.GetNamespace(),
		ProviderID:          fmt.Sprintf("inmemory:///%s/%s/%s", m.GetNamespace(), m.GetName(), incarnation()),
		ClassName:           class.GetName(),
		ClassNamespace:      class.GetNamespace(),
		ProviderSpec:        spec.canonical,
		NodeName:            m.GetName(),
		NeedsInitialization: d.opts.RequireInitialization && d.opts.capabilityEnabled(driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE),
		LastKnownState:      stateCreated,
		Capacity:            spec.capacity,
		BootDelay:           spec.bootDelay,
		Created:             time.Now().UTC(),
	}
	d.vms[vm.Name] = vm
	d.log.Info("created VM", "machine", vm.Namespace+"/"+vm.Name, "providerID", vm.ProviderID, "class", vm.ClassName)
	if err := d.saveLocked(); err != nil {
		return nil, err
	}
	return createResponse(vm), nil
}

// incompatibility says how a create request differs from the VM that exists
// for its name, or returns "" when the request is compatible. The driver
// holds one VM per name, so a name used in another namespace is refused
// (§6.1.3 allows ALREADY_EXISTS there). The class name is not compared: a
// Machine whose class was changed, with the same provider spec, asks for
// the VM it has (§11.8); the VM stays listed under its original class.
func incompatibility(vm *VM, m *driverv1alpha1.Machine, spec providerSpec) string {
	switch {
	case vm.Namespace != m.GetNamespace():
		return fmt.Sprintf("namespace %q", vm.Namespace)
	case string(vm.ProviderSpec) != string(spec.canonical):
		return "another provider spec"
	}
	return ""
}

func createResponse(vm *VM) *driverv1alpha1.CreateMachineResponse {
	return &driverv1alpha1.CreateMachineResponse{
		ProviderId:     vm.ProviderID,
		NodeName:       vm.NodeName,
		LastKnownState: vm.LastKnownState,
		Addresses:      addresses(vm),
	}
}

// incarnation returns a random suffix that tells VMs of one name apart.
func incarnation() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// addresses returns the VM's made-up addresses: its name as Hostname and an
// InternalIP in 10.0.0.0/8 derived from the provider ID, so it is stable for
// the VM's life and differs between incarnations.
func addresses(vm *VM) []*driverv1alpha1.NodeAddress {
	h := fnv.New32a()
	_, _ = h.Write([]byte(vm.ProviderID))
	sum := h.Sum32()
	ip := netip.AddrFrom4([4]byte{10, byte(sum >> 16), byte(sum >> 8), byte(sum)})
	return []*driverv1alpha1.NodeAddress{
		{Type: "InternalIP", Address: ip.String()},
		{Type: "Hostname", Address: vm.NodeName},
	}
}

// lookupLocked finds the VM of a machine: by name, in the machine's
// namespace, and with the machine's provider ID when it is set. The caller
// holds d.mu.
func (d *Driver) lookupLocked(m *driverv1alpha1.Machine) (*VM, bool) {
	vm, ok := d.vms[m.GetName()]
	if !ok || vm.Namespace != m.GetNamespace() {
		return nil, false
	}
	if m.GetProviderId() != "" && m.GetProviderId() != vm.ProviderID {
		return nil, false
	}
	return vm, true
}

func notFound(m *driverv1alpha1.Machine) error {
	if m.GetProviderId() != "" {
		return status.Errorf(codes.NotFound, "no VM with provider ID %s for machine %q", m.GetProviderId(), m.GetName())
	}
	return status.Errorf(codes.NotFound, "no VM for machine %q", m.GetName())
}

// DeleteMachine deletes the VM of a machine. A VM that is gone, or that
// belongs to another incarnation of the machine, counts as deleted.
func (d *Driver) DeleteMachine(ctx context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	err := d.serve(ctx, MethodDeleteMachine, req.GetMachine().GetName(), func() error {
		m := req.GetMachine()
		if err := checkMachineAndClass(m, req.GetMachineClass()); err != nil {
			return err
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		vm, ok := d.lookupLocked(m)
		if !ok {
			return nil
		}
		delete(d.vms, vm.Name)
		d.log.Info("deleted VM", "machine", vm.Namespace+"/"+vm.Name, "providerID", vm.ProviderID)
		return d.saveLocked()
	})
	if err != nil {
		return nil, err
	}
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

// GetMachineStatus reports the VM of a machine, NOT_FOUND when there is none.
func (d *Driver) GetMachineStatus(ctx context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	var resp *driverv1alpha1.GetMachineStatusResponse
	err := d.serve(ctx, MethodGetMachineStatus, req.GetMachine().GetName(), func() error {
		m := req.GetMachine()
		if err := checkMachineAndClass(m, req.GetMachineClass()); err != nil {
			return err
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		vm, ok := d.lookupLocked(m)
		if !ok {
			return notFound(m)
		}
		resp = &driverv1alpha1.GetMachineStatusResponse{
			ProviderId:          vm.ProviderID,
			NodeName:            vm.NodeName,
			Addresses:           addresses(vm),
			NeedsInitialization: vm.NeedsInitialization,
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// InitializeMachine completes a VM that reports needs_initialization. It is
// idempotent: initializing an initialized VM is OK.
func (d *Driver) InitializeMachine(ctx context.Context, req *driverv1alpha1.InitializeMachineRequest) (*driverv1alpha1.InitializeMachineResponse, error) {
	if err := d.unlessDisabled(driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE, MethodInitializeMachine); err != nil {
		return nil, err
	}
	var resp *driverv1alpha1.InitializeMachineResponse
	err := d.serve(ctx, MethodInitializeMachine, req.GetMachine().GetName(), func() error {
		m := req.GetMachine()
		if err := checkMachineAndClass(m, req.GetMachineClass()); err != nil {
			return err
		}
		if m.GetProviderId() == "" {
			return invalid("machine.provider_id is required")
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		vm, ok := d.lookupLocked(m)
		if !ok {
			return notFound(m)
		}
		if vm.NeedsInitialization {
			vm.NeedsInitialization = false
			vm.LastKnownState = stateInitialized
			d.log.Info("initialized VM", "machine", vm.Namespace+"/"+vm.Name, "providerID", vm.ProviderID)
			if err := d.saveLocked(); err != nil {
				return err
			}
		}
		resp = &driverv1alpha1.InitializeMachineResponse{
			ProviderId:     vm.ProviderID,
			NodeName:       vm.NodeName,
			Addresses:      addresses(vm),
			LastKnownState: vm.LastKnownState,
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// ListMachines lists the VMs created with a machine class (by namespace and
// name), ordered by machine name.
func (d *Driver) ListMachines(ctx context.Context, req *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	if err := d.unlessDisabled(driverv1alpha1.Capability_TYPE_LIST_MACHINES, MethodListMachines); err != nil {
		return nil, err
	}
	resp := &driverv1alpha1.ListMachinesResponse{}
	err := d.serve(ctx, MethodListMachines, "", func() error {
		class := req.GetMachineClass()
		if err := checkClass(class, "machine_class"); err != nil {
			return err
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, name := range slices.Sorted(maps.Keys(d.vms)) {
			if vm := d.vms[name]; vm.ClassName == class.GetName() && vm.ClassNamespace == class.GetNamespace() {
				resp.Machines = append(resp.Machines, &driverv1alpha1.ListedMachine{
					ProviderId: vm.ProviderID, MachineName: vm.Name,
				})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// unlessDisabled answers UNIMPLEMENTED for an RPC whose capability is
// switched off, also when the driver is called without the SDK's server.
func (d *Driver) unlessDisabled(c driverv1alpha1.Capability_Type, method string) error {
	if d.opts.capabilityEnabled(c) {
		return nil
	}
	return status.Errorf(codes.Unimplemented, "%s is disabled in this driver", method)
}
