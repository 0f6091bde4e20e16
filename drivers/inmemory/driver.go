package inmemory

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// RPC names, as used by SetFault, Calls and ParseFaults.
const (
	MethodCreateMachine     = "CreateMachine"
	MethodInitializeMachine = "InitializeMachine"
	MethodDeleteMachine     = "DeleteMachine"
	MethodGetMachineStatus  = "GetMachineStatus"
	MethodListMachines      = "ListMachines"
	MethodGetVolumeIDs      = "GetVolumeIDs"
	MethodUpdateMachine     = "UpdateMachine"
	MethodProbe             = "Probe"
)

var methods = []string{
	MethodCreateMachine, MethodInitializeMachine, MethodDeleteMachine,
	MethodGetMachineStatus, MethodListMachines, MethodGetVolumeIDs, MethodUpdateMachine, MethodProbe,
}

func isMethod(m string) bool { return slices.Contains(methods, m) }

// VM is one in-memory VM as seen by Driver.VMs.
type VM struct {
	// Name is the name of the Machine the VM was created for; the key.
	Name string `json:"name"`
	// Namespace is the Machine's namespace.
	Namespace string `json:"namespace"`
	// ProviderID is "inmemory:///<namespace>/<name>/<incarnation>".
	ProviderID string `json:"providerID"`
	// ClassName and ClassNamespace name the MachineClass the VM was created
	// with; ListMachines lists by both.
	ClassName      string `json:"className"`
	ClassNamespace string `json:"classNamespace"`
	// ProviderSpec is the class's provider spec as canonical JSON.
	ProviderSpec []byte `json:"providerSpec"`
	// NodeName is the name of the VM's Node: the machine name.
	NodeName string `json:"nodeName"`
	// NeedsInitialization is true until InitializeMachine ran, when the
	// driver requires initialization.
	NeedsInitialization bool `json:"needsInitialization"`
	// LastKnownState is what the driver last returned as last_known_state.
	LastKnownState string `json:"lastKnownState"`
	// Capacity and BootDelay come from the provider spec.
	Capacity  map[string]string `json:"capacity,omitempty"`
	BootDelay time.Duration     `json:"bootDelay,omitempty"`
	// Created is when CreateMachine created the VM.
	Created time.Time `json:"created"`
	// Updates counts the UpdateMachine calls that changed the VM;
	// Updated is when the last one did.
	Updates int       `json:"updates,omitempty"`
	Updated time.Time `json:"updated,omitzero"`
}

func (v *VM) clone() VM {
	c := *v
	c.ProviderSpec = slices.Clone(v.ProviderSpec)
	c.Capacity = maps.Clone(v.Capacity)
	return c
}

// Driver is the inmemory driver. It implements the SDK's Driver, Initializer,
// Lister, VolumeMapper, Updater and Prober interfaces. All methods are safe for
// concurrent use.
type Driver struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	vms      map[string]*VM // by machine name
	calls    map[string]int // by method
	served   int            // MachineService calls, for CrashAfter
	inFlight map[string]string
	faults   map[string]*activeFault
	notReady bool
}

// Open returns a driver configured by opts. It fails when opts has an
// invalid fault or its StateFile cannot be read.
func Open(opts Options) (*Driver, error) {
	opts = opts.withDefaults()
	d := &Driver{
		opts:     opts,
		log:      opts.Logger,
		vms:      map[string]*VM{},
		calls:    map[string]int{},
		inFlight: map[string]string{},
		faults:   map[string]*activeFault{},
	}
	for method, f := range opts.Faults {
		if err := checkFault(method, f); err != nil {
			return nil, err
		}
		d.faults[method] = newActiveFault(f)
	}
	if opts.StateFile != "" {
		vms, err := loadState(opts.StateFile)
		if err != nil {
			return nil, err
		}
		for _, vm := range vms {
			d.vms[vm.Name] = vm
		}
	}
	return d, nil
}

// New returns a driver configured by opts, for use in tests. It panics
// where Open fails.
func New(opts Options) *Driver {
	d, err := Open(opts)
	if err != nil {
		panic("inmemory: " + err.Error())
	}
	return d
}

// VMs returns a snapshot of the VMs, sorted by name.
func (d *Driver) VMs() []VM {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]VM, 0, len(d.vms))
	for _, name := range slices.Sorted(maps.Keys(d.vms)) {
		out = append(out, d.vms[name].clone())
	}
	return out
}

// Calls returns how many calls of the RPC named method reached the driver,
// including calls that failed.
func (d *Driver) Calls(method string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[method]
}

// SetReady sets what Probe answers (ready by default).
func (d *Driver) SetReady(ready bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.notReady = !ready
}

// Probe reports whether the driver is ready (see SetReady).
func (d *Driver) Probe(ctx context.Context) (bool, error) {
	ready := false
	err := d.serve(ctx, MethodProbe, "", func() error {
		d.mu.Lock()
		defer d.mu.Unlock()
		ready = !d.notReady
		return nil
	})
	return ready, err
}

// serve runs one RPC: it counts the call, crashes the process when
// CrashAfter is reached, refuses a second call for a machine that has one in
// flight, injects the RPC's fault and runs op. machine is empty for RPCs
// that are not about one machine.
func (d *Driver) serve(ctx context.Context, method, machine string, op func() error) error {
	fault, fire, err := d.begin(method, machine)
	if err != nil {
		return err
	}
	if machine != "" {
		defer d.end(machine)
	}
	if fire && !fault.After {
		if err := fault.inject(ctx, method); err != nil {
			return err
		}
	}
	if err := op(); err != nil {
		return err
	}
	if fire && fault.After {
		return fault.inject(ctx, method)
	}
	return nil
}

func (d *Driver) begin(method, machine string) (Fault, bool, error) {
	d.mu.Lock()
	d.calls[method]++
	if method != MethodProbe {
		d.served++
		if d.opts.CrashAfter > 0 && d.served > d.opts.CrashAfter {
			d.mu.Unlock()
			d.log.Warn("crashing on purpose", "crashAfter", d.opts.CrashAfter, "method", method)
			d.opts.Crash()
			// Crash normally does not return; when a test's Crash does,
			// the call fails as if the process had gone away.
			return Fault{}, false, status.Error(codes.Unavailable, "driver crashed on purpose")
		}
	}
	defer d.mu.Unlock()
	if machine != "" {
		if other, busy := d.inFlight[machine]; busy {
			return Fault{}, false, status.Errorf(codes.Aborted, "a %s call for machine %q is in progress", other, machine)
		}
		d.inFlight[machine] = method
	}
	fault, fire := d.nextFault(method)
	return fault, fire, nil
}

func (d *Driver) end(machine string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.inFlight, machine)
}

// Capabilities returns the optional capabilities the driver advertises.
func (d *Driver) Capabilities() []driverv1alpha1.Capability_Type {
	var out []driverv1alpha1.Capability_Type
	for _, c := range []driverv1alpha1.Capability_Type{
		driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
		driverv1alpha1.Capability_TYPE_LIST_MACHINES,
		driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
		driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
	} {
		if d.opts.capabilityEnabled(c) {
			out = append(out, c)
		}
	}
	return out
}
