package conformance_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// refDriver is a small, correct in-memory driver written against the raw
// generated gRPC interfaces (not the SDK, so that the suite is tested
// independently of it). Each breakage flag turns one behaviour into a
// contract violation; the tests in broken_test.go check that the suite
// catches each.
type refDriver struct {
	driverv1alpha1.UnimplementedIdentityServiceServer
	driverv1alpha1.UnimplementedMachineServiceServer

	caps   []driverv1alpha1.Capability_Type
	broken breakage
	// mut and mutState are the violations of mutants_test.go, applied by
	// the interceptor mutate around this driver.
	mut      mutation
	mutState mutationState

	mu       sync.Mutex
	vms      []*refVM // in creation order
	inflight map[string]bool
	nextID   int
	busy     bool // for breakage.abortsParallel
	// unavailableEvery, when > 0, answers every n-th MachineService call
	// UNAVAILABLE before it takes effect: legitimate (provider
	// throttling), and the suite must retry it as the core does.
	unavailableEvery int
	calls            int
	infoCalls        int // for breakage.unstableIdentity
}

// breakage lists the deliberate contract violations of refDriver.
type breakage struct {
	socketOpenToAll            bool // socket mode 0666
	connectionState            bool // VMs are kept per client connection
	unstableIdentity           bool // the manifest changes with every call
	badPluginName              bool // GetPluginInfo.name with upper case and '_'
	badVersion                 bool // vendor_version is not semver
	unknownCapability          bool // advertises TYPE_UNSPECIFIED (a value the suite does not know is logged, not failed, §3.4)
	advertisedButUnimplemented bool // advertises TYPE_LIST_MACHINES, ListMachines answers UNIMPLEMENTED
	unadvertisedImplemented    bool // serves GetVolumeIDs without advertising it
	internalForMissingName     bool // machine.name missing → INTERNAL
	fieldNotNamed              bool // INVALID_ARGUMENT messages do not name the field
	classNamespaceIgnored      bool // accepts a class without namespace
	newProviderIDEachCreate    bool // a repeated create returns a new provider ID
	secondVMOnRepeat           bool // a repeated create makes a second VM (same ID returned)
	userDataCompared           bool // a repeat with other user_data answers ALREADY_EXISTS
	incompatibleAccepted       bool // a different provider_spec answers OK
	lastKnownStateRejected     bool // last_known_state sent back answers INVALID_ARGUMENT
	dependsOnLastKnownState    bool // a repeat without last_known_state creates a new VM
	secretInState              bool // last_known_state carries a secret
	statusIgnoresProviderID    bool // status ignores a mismatching provider_id
	statusUnknownInternal      bool // status of an unknown machine → INTERNAL
	statusAfterDeleteOK        bool // delete hides the VM from list only; status still OK
	deleteUnknownNotFound      bool // delete of an unknown machine → NOT_FOUND
	deleteByIDOnly             bool // delete without provider_id does nothing and answers OK
	deleteIgnoresProviderID    bool // delete with a provider_id deletes the name's VM anyway
	resurrectsDeleted          bool // a create after delete brings the deleted VM back
	listMissesLatest           bool // list leaves out the most recently created VM
	listDuplicates             bool // list names every VM twice
	listIgnoresClass           bool // list returns the VMs of every class
	claimsForeignVolumes       bool // maps every CSI volume, whatever its driver
	secretEchoed               bool // error messages quote the request
	deadlineIgnored            bool // create sleeps past a short deadline
	abortsParallel             bool // ABORTED while another machine's create is in flight
	initializeNoop             bool // InitializeMachine answers OK but the VM keeps needing it
	updateEmptyAnswer          bool // UpdateMachine answers OK with neither applied nor needs_new_vm for a change it cannot take
	updateOtherProviderID      bool // an applied update answers another provider ID
	updateNodeNameChanges      bool // an applied update answers another node name
	updateNoReason             bool // needs_new_vm without a reason
	updateNoop                 bool // applied, but the VM keeps its old spec
	updatePartial              bool // a change it cannot take is applied all the same, then answered needs_new_vm
	updateRefusalIsError       bool // a change it cannot take answers FAILED_PRECONDITION
	updateRepeatFails          bool // a repeated UpdateMachine answers FAILED_PRECONDITION
	updateIgnoresProviderID    bool // UpdateMachine updates the machine's VM whatever provider_id says
}

type refVM struct {
	name, namespace, class, providerID string
	spec                               []byte // canonical JSON
	userData                           []byte // only compared with breakage.userDataCompared
	initialized, deleted               bool
	conn                               int64 // the connection that created it
	updates                            int   // UpdateMachine calls answered for it
}

const refCSIDriver = "disk.reference.conformance.example"

// allCaps are the optional capabilities; refDriver advertises those given.
var allCaps = []driverv1alpha1.Capability_Type{
	driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
	driverv1alpha1.Capability_TYPE_LIST_MACHINES,
	driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
	driverv1alpha1.Capability_TYPE_UPDATE_MACHINE,
}

func newRefDriver(caps []driverv1alpha1.Capability_Type, b breakage) *refDriver {
	return &refDriver{caps: caps, broken: b, inflight: map[string]bool{}}
}

func (d *refDriver) has(c driverv1alpha1.Capability_Type) bool {
	for _, x := range d.caps {
		if x == c {
			return true
		}
	}
	return false
}

// invalid builds an INVALID_ARGUMENT error; with secretEchoed it quotes the
// whole request, secrets included, as careless drivers do.
func (d *refDriver) invalid(req any, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if d.broken.fieldNotNamed {
		msg = "invalid request"
	}
	if d.broken.secretEchoed {
		msg += fmt.Sprintf(" (request: %v)", req)
	}
	return status.Error(codes.InvalidArgument, msg)
}

// --- IdentityService ---

func (d *refDriver) GetPluginInfo(context.Context, *driverv1alpha1.GetPluginInfoRequest) (*driverv1alpha1.GetPluginInfoResponse, error) {
	resp := &driverv1alpha1.GetPluginInfoResponse{
		Name: "reference.conformance.machina.io", VendorVersion: "v0.1.0",
		Manifest: map[string]string{"purpose": "conformance self-test"},
	}
	if d.broken.badPluginName {
		resp.Name = "Reference_Driver"
	}
	if d.broken.badVersion {
		resp.VendorVersion = "latest"
	}
	if d.broken.unstableIdentity {
		d.mu.Lock()
		d.infoCalls++
		resp.Manifest["calls"] = fmt.Sprint(d.infoCalls)
		d.mu.Unlock()
	}
	return resp, nil
}

func (d *refDriver) GetPluginCapabilities(context.Context, *driverv1alpha1.GetPluginCapabilitiesRequest) (*driverv1alpha1.GetPluginCapabilitiesResponse, error) {
	resp := &driverv1alpha1.GetPluginCapabilitiesResponse{}
	for _, c := range d.caps {
		resp.Capabilities = append(resp.Capabilities, &driverv1alpha1.Capability{Type: c})
	}
	if d.broken.unknownCapability {
		resp.Capabilities = append(resp.Capabilities, &driverv1alpha1.Capability{Type: driverv1alpha1.Capability_TYPE_UNSPECIFIED})
	}
	return resp, nil
}

func (d *refDriver) Probe(context.Context, *driverv1alpha1.ProbeRequest) (*driverv1alpha1.ProbeResponse, error) {
	return &driverv1alpha1.ProbeResponse{Ready: wrapperspb.Bool(true)}, nil
}

// --- validation ---

func (d *refDriver) checkMachine(req any, m *driverv1alpha1.Machine) error {
	switch {
	case m == nil:
		return d.invalid(req, "machine is required")
	case m.GetName() == "":
		if d.broken.internalForMissingName {
			return status.Error(codes.Internal, "nil pointer dereference")
		}
		return d.invalid(req, "machine.name is required")
	case m.GetNamespace() == "":
		return d.invalid(req, "machine.namespace is required")
	}
	return nil
}

func (d *refDriver) checkClass(req any, c *driverv1alpha1.MachineClass) error {
	switch {
	case c == nil:
		return d.invalid(req, "machine_class is required")
	case c.GetName() == "":
		return d.invalid(req, "machine_class.name is required")
	case c.GetNamespace() == "" && !d.broken.classNamespaceIgnored:
		return d.invalid(req, "machine_class.namespace is required")
	}
	return nil
}

// canonicalSpec validates a provider spec and returns it re-encoded, so
// that two encodings of one object compare equal.
func (d *refDriver) canonicalSpec(req any, raw []byte) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, d.invalid(req, "machine_class.provider_spec must be a JSON object")
	}
	return json.Marshal(obj)
}

// checkState accepts only a last_known_state this driver returned.
func (d *refDriver) checkState(req any, state string) error {
	if state == "" {
		return nil
	}
	var s struct{ VM string }
	if d.broken.lastKnownStateRejected || json.Unmarshal([]byte(state), &s) != nil || s.VM == "" {
		return d.invalid(req, "last_known_state is not a state of this driver")
	}
	return nil
}

// --- per-machine operation lock (§9): a second call for a machine with an
// operation in flight answers ABORTED, as the spec allows.

func (d *refDriver) begin(name string) (func(), error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.inflight[name] {
		return nil, status.Errorf(codes.Aborted, "an operation for machine %s is in progress", name)
	}
	d.inflight[name] = true
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.inflight, name)
	}, nil
}

// find returns the live VMs of a machine, by namespace and name (§6.1.3).
// Caller holds d.mu.
func (d *refDriver) find(ctx context.Context, m *driverv1alpha1.Machine) []*refVM {
	var out []*refVM
	for _, v := range d.vms {
		if v.name == m.GetName() && v.namespace == m.GetNamespace() && !v.deleted && d.visible(ctx, v) {
			out = append(out, v)
		}
	}
	return out
}

// visible is false only for breakage.connectionState: a VM created on
// another connection.
func (d *refDriver) visible(ctx context.Context, v *refVM) bool {
	return !d.broken.connectionState || v.conn == connID(ctx)
}

func (d *refDriver) newVM(ctx context.Context, req *driverv1alpha1.CreateMachineRequest, spec []byte) *refVM {
	d.nextID++
	v := &refVM{
		name: req.GetMachine().GetName(), namespace: req.GetMachine().GetNamespace(), class: req.GetMachineClass().GetName(),
		spec: spec, userData: req.GetUserData(), providerID: fmt.Sprintf("reference:///vm-%d", d.nextID), conn: connID(ctx),
	}
	d.vms = append(d.vms, v)
	return v
}

func (d *refDriver) state(v *refVM, req *driverv1alpha1.CreateMachineRequest) string {
	if d.broken.secretInState {
		return fmt.Sprintf(`{"VM":%q,"token":%q}`, v.providerID, req.GetSecrets()["machina-conformance-canary"])
	}
	return fmt.Sprintf(`{"VM":%q}`, v.providerID)
}

// --- MachineService ---

func (d *refDriver) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	if err := d.checkMachine(req, req.GetMachine()); err != nil {
		return nil, err
	}
	if err := d.checkClass(req, req.GetMachineClass()); err != nil {
		return nil, err
	}
	if ns := req.GetMachineClass().GetNamespace(); ns != "" && ns != req.GetMachine().GetNamespace() {
		return nil, d.invalid(req, "machine_class.namespace must equal machine.namespace")
	}
	spec, err := d.canonicalSpec(req, req.GetMachineClass().GetProviderSpec())
	if err != nil {
		return nil, err
	}
	if err := d.checkState(req, req.GetLastKnownState()); err != nil {
		return nil, err
	}
	name := req.GetMachine().GetName()
	done, err := d.begin(name)
	if err != nil {
		return nil, err
	}
	defer done()
	if d.broken.abortsParallel {
		d.mu.Lock()
		busy := d.busy
		d.busy = true
		d.mu.Unlock()
		if busy {
			return nil, status.Error(codes.Aborted, "the driver is busy")
		}
		// The simulated cloud call that holds the global lock.
		time.Sleep(300 * time.Millisecond)
		defer func() { d.mu.Lock(); d.busy = false; d.mu.Unlock() }()
	}
	if dl, ok := ctx.Deadline(); ok && d.broken.deadlineIgnored && time.Until(dl) < 2*time.Second {
		// A slow cloud call that does not watch ctx.
		time.Sleep(3 * time.Second)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	existing := d.find(ctx, req.GetMachine())
	if len(existing) > 0 && !(d.broken.dependsOnLastKnownState && req.GetLastKnownState() == "") {
		v := existing[0]
		if !bytes.Equal(v.spec, spec) && !d.broken.incompatibleAccepted {
			return nil, status.Errorf(codes.AlreadyExists, "machine %s has a VM with a different provider_spec", name)
		}
		if d.broken.userDataCompared && !bytes.Equal(v.userData, req.GetUserData()) {
			return nil, status.Errorf(codes.AlreadyExists, "machine %s has a VM with other user data", name)
		}
		switch {
		case d.broken.newProviderIDEachCreate:
			d.nextID++
			v.providerID = fmt.Sprintf("reference:///vm-%d", d.nextID)
		case d.broken.secondVMOnRepeat:
			d.newVM(ctx, req, spec)
		}
		return &driverv1alpha1.CreateMachineResponse{ProviderId: v.providerID, NodeName: name, LastKnownState: d.state(v, req)}, nil
	}
	if d.broken.resurrectsDeleted {
		for _, v := range d.vms {
			if v.name == name && v.deleted {
				v.deleted = false
				return &driverv1alpha1.CreateMachineResponse{ProviderId: v.providerID, NodeName: name, LastKnownState: d.state(v, req)}, nil
			}
		}
	}
	v := d.newVM(ctx, req, spec)
	return &driverv1alpha1.CreateMachineResponse{ProviderId: v.providerID, NodeName: name, LastKnownState: d.state(v, req)}, nil
}

func (d *refDriver) InitializeMachine(ctx context.Context, req *driverv1alpha1.InitializeMachineRequest) (*driverv1alpha1.InitializeMachineResponse, error) {
	if !d.has(driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE) {
		return nil, status.Error(codes.Unimplemented, "InitializeMachine is not supported")
	}
	if err := d.checkMachine(req, req.GetMachine()); err != nil {
		return nil, err
	}
	if req.GetMachine().GetProviderId() == "" {
		return nil, d.invalid(req, "machine.provider_id is required")
	}
	if err := d.checkClass(req, req.GetMachineClass()); err != nil {
		return nil, err
	}
	if err := d.checkState(req, req.GetLastKnownState()); err != nil {
		return nil, err
	}
	name := req.GetMachine().GetName()
	done, err := d.begin(name)
	if err != nil {
		return nil, err
	}
	defer done()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range d.find(ctx, req.GetMachine()) {
		if v.providerID != req.GetMachine().GetProviderId() {
			continue
		}
		if !d.broken.initializeNoop {
			v.initialized = true
		}
		return &driverv1alpha1.InitializeMachineResponse{ProviderId: v.providerID, NodeName: name}, nil
	}
	return nil, status.Errorf(codes.NotFound, "machine %s has no VM %s", name, req.GetMachine().GetProviderId())
}

// UpdateMachine applies a change of the key "labels" only; any other
// difference needs a new VM (§6.7.3).
func (d *refDriver) UpdateMachine(ctx context.Context, req *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error) {
	if !d.has(driverv1alpha1.Capability_TYPE_UPDATE_MACHINE) {
		return nil, status.Error(codes.Unimplemented, "UpdateMachine is not supported")
	}
	if err := d.checkMachine(req, req.GetMachine()); err != nil {
		return nil, err
	}
	if req.GetMachine().GetProviderId() == "" {
		return nil, d.invalid(req, "machine.provider_id is required")
	}
	if req.GetOldMachineClass() == nil {
		return nil, d.invalid(req, "old_machine_class is required")
	}
	if err := d.checkClass(req, req.GetMachineClass()); err != nil {
		return nil, err
	}
	spec, err := d.canonicalSpec(req, req.GetMachineClass().GetProviderSpec())
	if err != nil {
		return nil, err
	}
	name := req.GetMachine().GetName()
	done, err := d.begin(name)
	if err != nil {
		return nil, err
	}
	defer done()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range d.find(ctx, req.GetMachine()) {
		if v.providerID != req.GetMachine().GetProviderId() && !d.broken.updateIgnoresProviderID {
			continue
		}
		v.updates++
		if d.broken.updateRepeatFails && v.updates > 1 {
			return nil, status.Error(codes.FailedPrecondition, "the VM was updated already")
		}
		if !sameButLabels(v.spec, spec) {
			switch {
			case d.broken.updateRefusalIsError:
				return nil, status.Error(codes.FailedPrecondition, "the change needs a new VM")
			case d.broken.updateEmptyAnswer:
				return &driverv1alpha1.UpdateMachineResponse{}, nil
			}
			if d.broken.updatePartial {
				v.spec = spec
			}
			reason := "only labels can change on a running VM"
			if d.broken.updateNoReason {
				reason = ""
			}
			return &driverv1alpha1.UpdateMachineResponse{Result: &driverv1alpha1.UpdateMachineResponse_NeedsNewVm{NeedsNewVm: &driverv1alpha1.NeedsNewVM{Reason: reason}}}, nil
		}
		if !d.broken.updateNoop {
			v.spec = spec
		}
		st := &driverv1alpha1.GetMachineStatusResponse{ProviderId: v.providerID, NodeName: name}
		if d.broken.updateOtherProviderID {
			st.ProviderId += "-updated"
		}
		if d.broken.updateNodeNameChanges {
			st.NodeName += "-updated"
		}
		return &driverv1alpha1.UpdateMachineResponse{Result: &driverv1alpha1.UpdateMachineResponse_Applied{Applied: st}}, nil
	}
	return nil, status.Errorf(codes.NotFound, "machine %s has no VM %s", name, req.GetMachine().GetProviderId())
}

// sameButLabels reports whether two canonical provider specs differ at most
// in the key "labels".
func sameButLabels(a, b []byte) bool {
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return false
	}
	delete(ma, "labels")
	delete(mb, "labels")
	if len(ma) != len(mb) {
		return false
	}
	for k, v := range ma {
		if w, ok := mb[k]; !ok || string(w) != string(v) {
			return false
		}
	}
	return true
}

func (d *refDriver) DeleteMachine(ctx context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	if err := d.checkMachine(req, req.GetMachine()); err != nil {
		return nil, err
	}
	if err := d.checkClass(req, req.GetMachineClass()); err != nil {
		return nil, err
	}
	if err := d.checkState(req, req.GetLastKnownState()); err != nil {
		return nil, err
	}
	name, id := req.GetMachine().GetName(), req.GetMachine().GetProviderId()
	done, err := d.begin(name)
	if err != nil {
		return nil, err
	}
	defer done()
	d.mu.Lock()
	defer d.mu.Unlock()
	vms := d.find(ctx, req.GetMachine())
	if len(vms) == 0 && d.broken.deleteUnknownNotFound {
		return nil, status.Errorf(codes.NotFound, "machine %s not found", name)
	}
	if id == "" && d.broken.deleteByIDOnly {
		return &driverv1alpha1.DeleteMachineResponse{}, nil
	}
	for _, v := range vms {
		// With a provider ID, only that VM: another VM of the name may
		// belong to a newer Machine (§6.3.3).
		if id == "" || v.providerID == id || d.broken.deleteIgnoresProviderID {
			v.deleted = true
		}
	}
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

func (d *refDriver) GetMachineStatus(ctx context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	if err := d.checkMachine(req, req.GetMachine()); err != nil {
		return nil, err
	}
	if err := d.checkClass(req, req.GetMachineClass()); err != nil {
		return nil, err
	}
	name, id := req.GetMachine().GetName(), req.GetMachine().GetProviderId()
	d.mu.Lock()
	defer d.mu.Unlock()
	var found []*refVM
	for _, v := range d.vms {
		if v.name != name || v.namespace != req.GetMachine().GetNamespace() || !d.visible(ctx, v) || (v.deleted && !d.broken.statusAfterDeleteOK) {
			continue
		}
		if id == "" || v.providerID == id || d.broken.statusIgnoresProviderID {
			found = append(found, v)
		}
	}
	switch {
	case len(found) == 0 && d.broken.statusUnknownInternal:
		return nil, status.Errorf(codes.Internal, "lookup of %s failed", name)
	case len(found) == 0:
		msg := fmt.Sprintf("machine %s has no VM", name)
		if d.broken.secretEchoed {
			msg += fmt.Sprintf(" (secrets %q)", req.GetSecrets())
		}
		return nil, status.Error(codes.NotFound, msg)
	case len(found) > 1 && !d.broken.statusAfterDeleteOK:
		var ids []string
		for _, v := range found {
			ids = append(ids, v.providerID)
		}
		return nil, status.Errorf(codes.FailedPrecondition, "machine %s has several VMs: %v", name, ids)
	}
	v := found[len(found)-1]
	return &driverv1alpha1.GetMachineStatusResponse{
		ProviderId:          v.providerID,
		NodeName:            name,
		NeedsInitialization: d.has(driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE) && !v.initialized,
	}, nil
}

func (d *refDriver) ListMachines(ctx context.Context, req *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	if !d.has(driverv1alpha1.Capability_TYPE_LIST_MACHINES) || d.broken.advertisedButUnimplemented {
		return nil, status.Error(codes.Unimplemented, "ListMachines is not supported")
	}
	if err := d.checkClass(req, req.GetMachineClass()); err != nil {
		return nil, err
	}
	c := req.GetMachineClass()
	inClass := func(v *refVM) bool {
		return !v.deleted && d.visible(ctx, v) &&
			(d.broken.listIgnoresClass || (v.class == c.GetName() && v.namespace == c.GetNamespace()))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := &driverv1alpha1.ListMachinesResponse{}
	var latest *refVM
	for _, v := range d.vms {
		if inClass(v) {
			latest = v
		}
	}
	for _, v := range d.vms {
		if !inClass(v) || (d.broken.listMissesLatest && v == latest) {
			continue
		}
		entry := &driverv1alpha1.ListedMachine{ProviderId: v.providerID, MachineName: v.name}
		resp.Machines = append(resp.Machines, entry)
		if d.broken.listDuplicates {
			resp.Machines = append(resp.Machines, entry)
		}
	}
	return resp, nil
}

func (d *refDriver) GetVolumeIDs(_ context.Context, req *driverv1alpha1.GetVolumeIDsRequest) (*driverv1alpha1.GetVolumeIDsResponse, error) {
	if !d.has(driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS) && !d.broken.unadvertisedImplemented {
		return nil, status.Error(codes.Unimplemented, "GetVolumeIDs is not supported")
	}
	if len(req.GetVolumes()) == 0 {
		return nil, d.invalid(req, "volumes is required")
	}
	resp := &driverv1alpha1.GetVolumeIDsResponse{}
	seen := map[string]bool{}
	for i, pv := range req.GetVolumes() {
		switch {
		case pv.GetName() == "":
			return nil, d.invalid(req, "volumes[%d].name is required", i)
		case seen[pv.GetName()]:
			return nil, d.invalid(req, "volumes[%d].name repeats an earlier volume", i)
		case len(pv.GetSpec()) == 0:
			return nil, d.invalid(req, "volumes[%d].spec is required", i)
		case !json.Valid(pv.GetSpec()):
			return nil, d.invalid(req, "volumes[%d].spec is not valid JSON", i)
		case bytes.TrimLeft(pv.GetSpec(), " \t\r\n")[0] != '{':
			return nil, d.invalid(req, "volumes[%d].spec must be a JSON object", i)
		}
		seen[pv.GetName()] = true
		if id := refVolumeID(pv, d.broken.claimsForeignVolumes); id != "" {
			resp.VolumeIds = append(resp.VolumeIds, &driverv1alpha1.VolumeID{PersistentVolumeName: pv.GetName(), VolumeId: id})
		}
	}
	return resp, nil
}

// refVolumeID maps a volume of this "provider": CSI volumes of
// refCSIDriver (the handle is the ID) and in-tree AWS EBS volumes (the last
// segment of aws://zone/vol-id).
func refVolumeID(pv *driverv1alpha1.PersistentVolume, claimAllCSI bool) string {
	if pv.GetCsiDriver() != "" {
		if pv.GetCsiDriver() == refCSIDriver || claimAllCSI {
			return pv.GetCsiVolumeHandle()
		}
		return ""
	}
	var spec struct {
		AWSElasticBlockStore *struct {
			VolumeID string `json:"volumeID"`
		} `json:"awsElasticBlockStore"`
	}
	if json.Unmarshal(pv.GetSpec(), &spec) != nil || spec.AWSElasticBlockStore == nil {
		return ""
	}
	id := spec.AWSElasticBlockStore.VolumeID
	return id[strings.LastIndex(id, "/")+1:]
}

// serveRef serves d on a Unix socket in a fresh temporary directory and
// returns the endpoint. The directory comes from os.MkdirTemp("", ...)
// rather than t.TempDir(): test names make the latter too long for the
// 108-byte socket path limit.
//
// grpc-go's own HTTP/2 transport resets a stream when its deadline passes,
// whatever the handler does. A driver with breakage.deadlineIgnored is
// served through grpc.Server's http.Handler on net/http instead, a
// transport that leaves deadlines to the handler, as servers of other
// stacks do: that is how a deadline-ignoring driver looks on the wire.
func serveRef(t *testing.T, d *refDriver) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mconf")
	require.NoError(t, err)
	sock := filepath.Join(dir, "driver.sock")
	lis, err := net.Listen("unix", sock)
	require.NoError(t, err)
	mode := os.FileMode(0o600)
	if d.broken.socketOpenToAll {
		mode = 0o666
	}
	require.NoError(t, os.Chmod(sock, mode))
	srv := grpc.NewServer(append(d.mut.serverOptions(), grpc.StatsHandler(connTagger{}), grpc.ChainUnaryInterceptor(d.throttle, d.mutate))...)
	driverv1alpha1.RegisterIdentityServiceServer(srv, d)
	driverv1alpha1.RegisterMachineServiceServer(srv, d)
	served := make(chan struct{})
	var stop func()
	if d.broken.deadlineIgnored || d.mut.resetsStreams || d.mut.overHTTP {
		var protocols http.Protocols
		protocols.SetUnencryptedHTTP2(true)
		hs := &http.Server{Handler: d.mut.wrapHTTP(srv), Protocols: &protocols, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			defer close(served)
			_ = hs.Serve(lis)
		}()
		stop = func() { _ = hs.Close() }
	} else {
		go func() {
			defer close(served)
			_ = srv.Serve(lis)
		}()
		stop = srv.Stop
	}
	t.Cleanup(func() {
		stop()
		<-served
		_ = os.RemoveAll(dir)
	})
	return "unix://" + sock
}

// throttle implements refDriver.unavailableEvery.
func (d *refDriver) throttle(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if d.unavailableEvery > 0 && strings.HasPrefix(info.FullMethod, "/machina.driver.v1alpha1.MachineService/") {
		d.mu.Lock()
		d.calls++
		throttled := d.calls%d.unavailableEvery == 0
		d.mu.Unlock()
		if throttled {
			return nil, status.Error(codes.Unavailable, "rate limit exceeded at the provider")
		}
	}
	return handler(ctx, req)
}

// connTagger numbers the server's connections, for
// breakage.connectionState: a gRPC stats handler's TagConn context is the
// parent of every call context of the connection.
type connTagger struct{}

type connKey struct{}

var connCounter atomic.Int64

func (connTagger) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connKey{}, connCounter.Add(1))
}
func (connTagger) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (connTagger) HandleRPC(context.Context, stats.RPCStats)                       {}
func (connTagger) HandleConn(context.Context, stats.ConnStats)                     {}

// connID is the number of the connection a call came on (0 when served
// through net/http, which has no stats handler).
func connID(ctx context.Context) int64 {
	id, _ := ctx.Value(connKey{}).(int64)
	return id
}

// liveVMs counts the VMs the driver holds, for checks that the suite cleaned
// up after itself.
func (d *refDriver) liveVMs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, v := range d.vms {
		if !v.deleted {
			out = append(out, v.name+"="+v.providerID)
		}
	}
	return out
}
