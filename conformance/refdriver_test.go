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
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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
	break_ breakage

	mu       sync.Mutex
	vms      []*refVM // in creation order
	inflight map[string]bool
	nextID   int
	busy     bool // for breakage.abortsParallel
}

// breakage lists the deliberate contract violations of refDriver.
type breakage struct {
	badPluginName              bool // GetPluginInfo.name with upper case and '_'
	badVersion                 bool // vendor_version is not semver
	unknownCapability          bool // advertises Capability.Type 42
	advertisedButUnimplemented bool // advertises TYPE_LIST_MACHINES, ListMachines answers UNIMPLEMENTED
	unadvertisedImplemented    bool // serves GetVolumeIDs without advertising it
	internalForMissingName     bool // machine.name missing → INTERNAL
	fieldNotNamed              bool // INVALID_ARGUMENT messages do not name the field
	vmOnRejectedSpec           bool // creates the VM before it validates provider_spec
	newProviderIDEachCreate    bool // a repeated create returns a new provider ID
	secondVMOnRepeat           bool // a repeated create makes a second VM (same ID returned)
	incompatibleAccepted       bool // a different provider_spec answers OK
	lastKnownStateRejected     bool // last_known_state sent back answers INVALID_ARGUMENT
	lastKnownStateDropped      bool // a repeated create returns no last_known_state
	statusIgnoresProviderID    bool // status ignores a mismatching provider_id
	statusUnknownInternal      bool // status of an unknown machine → INTERNAL
	statusAfterDeleteOK        bool // delete hides the VM from list only; status still OK
	deleteUnknownNotFound      bool // delete of an unknown machine → NOT_FOUND
	deleteByIDOnly             bool // delete without provider_id does nothing and answers OK
	listMissesLatest           bool // list leaves out the most recently created VM
	listDuplicates             bool // list names every VM twice
	claimsForeignVolumes       bool // maps every CSI volume, whatever its driver
	secretEchoed               bool // error messages quote the request
	deadlineIgnored            bool // create sleeps past a short deadline
	abortsParallel             bool // ABORTED while another machine's create is in flight
	initializeNoop             bool // InitializeMachine answers OK but the VM keeps needing it
}

type refVM struct {
	name, class, providerID string
	spec                    []byte // canonical JSON
	initialized, deleted    bool
}

const (
	refCSIDriver = "disk.reference.conformance.example"
	refMaxVols   = 1024
)

var refDNS = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// allCaps are the optional capabilities; refDriver advertises those given.
var allCaps = []driverv1alpha1.Capability_Type{
	driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE,
	driverv1alpha1.Capability_TYPE_LIST_MACHINES,
	driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS,
}

func newRefDriver(caps []driverv1alpha1.Capability_Type, b breakage) *refDriver {
	return &refDriver{caps: caps, break_: b, inflight: map[string]bool{}}
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
	if d.break_.fieldNotNamed {
		msg = "invalid request"
	}
	if d.break_.secretEchoed {
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
	if d.break_.badPluginName {
		resp.Name = "Reference_Driver"
	}
	if d.break_.badVersion {
		resp.VendorVersion = "latest"
	}
	return resp, nil
}

func (d *refDriver) GetPluginCapabilities(context.Context, *driverv1alpha1.GetPluginCapabilitiesRequest) (*driverv1alpha1.GetPluginCapabilitiesResponse, error) {
	resp := &driverv1alpha1.GetPluginCapabilitiesResponse{}
	for _, c := range d.caps {
		resp.Capabilities = append(resp.Capabilities, &driverv1alpha1.Capability{Type: c})
	}
	if d.break_.unknownCapability {
		resp.Capabilities = append(resp.Capabilities, &driverv1alpha1.Capability{Type: driverv1alpha1.Capability_Type(42)})
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
		if d.break_.internalForMissingName {
			return status.Error(codes.Internal, "nil pointer dereference")
		}
		return d.invalid(req, "machine.name is required")
	case len(m.GetName()) > 253 || !refDNS.MatchString(m.GetName()):
		return d.invalid(req, "machine.name %q is not a DNS-1123 subdomain", m.GetName())
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
	}
	return nil
}

// canonicalSpec validates a provider spec and returns it re-encoded, so
// that two encodings of one object compare equal.
func (d *refDriver) canonicalSpec(req any, raw []byte) ([]byte, error) {
	const path = "machine_class.provider_spec"
	if len(raw) == 0 {
		return nil, d.invalid(req, "%s is required", path)
	}
	if len(raw) > 256<<10 {
		return nil, d.invalid(req, "%s has %d bytes, more than 256 KiB", path, len(raw))
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, d.invalid(req, "%s must be a JSON object", path)
	}
	return json.Marshal(obj)
}

func (d *refDriver) checkSecrets(req any, secrets map[string][]byte) error {
	if len(secrets) > 64 {
		return d.invalid(req, "secrets has %d entries, more than 64", len(secrets))
	}
	total := 0
	for k, v := range secrets {
		total += len(k) + len(v)
	}
	if total > 1<<20 {
		return d.invalid(req, "secrets hold %d bytes, more than 1 MiB", total)
	}
	return nil
}

// checkState accepts only a last_known_state this driver returned.
func (d *refDriver) checkState(req any, state string) error {
	if state == "" {
		return nil
	}
	var s struct{ VM string }
	if d.break_.lastKnownStateRejected || json.Unmarshal([]byte(state), &s) != nil || s.VM == "" {
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

// find returns the live VMs of a machine. Caller holds d.mu.
func (d *refDriver) find(name string) []*refVM {
	var out []*refVM
	for _, v := range d.vms {
		if v.name == name && !v.deleted {
			out = append(out, v)
		}
	}
	return out
}

func (d *refDriver) newVM(name, class string, spec []byte) *refVM {
	d.nextID++
	v := &refVM{name: name, class: class, spec: spec, providerID: fmt.Sprintf("reference:///vm-%d", d.nextID)}
	d.vms = append(d.vms, v)
	return v
}

func state(v *refVM) string { return fmt.Sprintf(`{"VM":%q}`, v.providerID) }

// --- MachineService ---

func (d *refDriver) CreateMachine(ctx context.Context, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	if err := d.checkMachine(req, req.GetMachine()); err != nil {
		return nil, err
	}
	if err := d.checkClass(req, req.GetMachineClass()); err != nil {
		return nil, err
	}
	name := req.GetMachine().GetName()
	if d.break_.vmOnRejectedSpec {
		d.mu.Lock()
		if len(d.find(name)) == 0 {
			d.newVM(name, req.GetMachineClass().GetName(), req.GetMachineClass().GetProviderSpec())
		}
		d.mu.Unlock()
	}
	spec, err := d.canonicalSpec(req, req.GetMachineClass().GetProviderSpec())
	if err != nil {
		return nil, err
	}
	if err := d.checkSecrets(req, req.GetSecrets()); err != nil {
		return nil, err
	}
	if n := len(req.GetUserData()); n > 1<<20 {
		return nil, d.invalid(req, "user_data has %d bytes, more than 1 MiB", n)
	}
	if err := d.checkState(req, req.GetLastKnownState()); err != nil {
		return nil, err
	}
	done, err := d.begin(name)
	if err != nil {
		return nil, err
	}
	defer done()
	if d.break_.abortsParallel {
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
	if dl, ok := ctx.Deadline(); ok && d.break_.deadlineIgnored && time.Until(dl) < 2*time.Second {
		// A slow cloud call that does not watch ctx.
		time.Sleep(3 * time.Second)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	existing := d.find(name)
	if len(existing) > 0 {
		v := existing[0]
		if !bytes.Equal(v.spec, spec) && !d.break_.incompatibleAccepted {
			return nil, status.Errorf(codes.AlreadyExists, "machine %s has a VM with a different provider_spec", name)
		}
		switch {
		case d.break_.newProviderIDEachCreate:
			d.nextID++
			v.providerID = fmt.Sprintf("reference:///vm-%d", d.nextID)
		case d.break_.secondVMOnRepeat:
			d.newVM(name, req.GetMachineClass().GetName(), spec)
		}
		resp := &driverv1alpha1.CreateMachineResponse{ProviderId: v.providerID, NodeName: name, LastKnownState: state(v)}
		if d.break_.lastKnownStateDropped {
			resp.LastKnownState = ""
		}
		return resp, nil
	}
	v := d.newVM(name, req.GetMachineClass().GetName(), spec)
	return &driverv1alpha1.CreateMachineResponse{ProviderId: v.providerID, NodeName: name, LastKnownState: state(v)}, nil
}

func (d *refDriver) InitializeMachine(_ context.Context, req *driverv1alpha1.InitializeMachineRequest) (*driverv1alpha1.InitializeMachineResponse, error) {
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
	vms := d.find(name)
	if len(vms) == 0 || vms[0].providerID != req.GetMachine().GetProviderId() {
		return nil, status.Errorf(codes.NotFound, "machine %s has no VM %s", name, req.GetMachine().GetProviderId())
	}
	if !d.break_.initializeNoop {
		vms[0].initialized = true
	}
	return &driverv1alpha1.InitializeMachineResponse{ProviderId: vms[0].providerID, NodeName: name, LastKnownState: state(vms[0])}, nil
}

func (d *refDriver) DeleteMachine(_ context.Context, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
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
	vms := d.find(name)
	if len(vms) == 0 && d.break_.deleteUnknownNotFound {
		return nil, status.Errorf(codes.NotFound, "machine %s not found", name)
	}
	if id == "" && d.break_.deleteByIDOnly {
		return &driverv1alpha1.DeleteMachineResponse{}, nil
	}
	for _, v := range vms {
		// A provider ID that does not match means the VM the core
		// recorded is gone: OK, and the other VM stays.
		if id == "" || v.providerID == id {
			v.deleted = true
		}
	}
	return &driverv1alpha1.DeleteMachineResponse{}, nil
}

func (d *refDriver) GetMachineStatus(_ context.Context, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	if err := d.checkMachine(req, req.GetMachine()); err != nil {
		return nil, err
	}
	if err := d.checkClass(req, req.GetMachineClass()); err != nil {
		return nil, err
	}
	name, id := req.GetMachine().GetName(), req.GetMachine().GetProviderId()
	d.mu.Lock()
	defer d.mu.Unlock()
	var found *refVM
	for _, v := range d.vms {
		if v.name != name || (v.deleted && !d.break_.statusAfterDeleteOK) {
			continue
		}
		if id == "" || v.providerID == id || d.break_.statusIgnoresProviderID {
			found = v
			break
		}
	}
	if found == nil {
		if d.break_.statusUnknownInternal {
			return nil, status.Errorf(codes.Internal, "lookup of %s failed", name)
		}
		msg := fmt.Sprintf("machine %s has no VM", name)
		if d.break_.secretEchoed {
			msg += fmt.Sprintf(" (secrets %q)", req.GetSecrets())
		}
		return nil, status.Error(codes.NotFound, msg)
	}
	return &driverv1alpha1.GetMachineStatusResponse{
		ProviderId:          found.providerID,
		NodeName:            name,
		NeedsInitialization: d.has(driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE) && !found.initialized,
	}, nil
}

func (d *refDriver) ListMachines(_ context.Context, req *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	if !d.has(driverv1alpha1.Capability_TYPE_LIST_MACHINES) || d.break_.advertisedButUnimplemented {
		return nil, status.Error(codes.Unimplemented, "ListMachines is not supported")
	}
	if err := d.checkClass(req, req.GetMachineClass()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	resp := &driverv1alpha1.ListMachinesResponse{}
	var latest *refVM
	for _, v := range d.vms {
		if !v.deleted && v.class == req.GetMachineClass().GetName() {
			latest = v
		}
	}
	for _, v := range d.vms {
		if v.deleted || v.class != req.GetMachineClass().GetName() || (d.break_.listMissesLatest && v == latest) {
			continue
		}
		entry := &driverv1alpha1.ListedMachine{ProviderId: v.providerID, MachineName: v.name}
		resp.Machines = append(resp.Machines, entry)
		if d.break_.listDuplicates {
			resp.Machines = append(resp.Machines, entry)
		}
	}
	return resp, nil
}

func (d *refDriver) GetVolumeIDs(_ context.Context, req *driverv1alpha1.GetVolumeIDsRequest) (*driverv1alpha1.GetVolumeIDsResponse, error) {
	if !d.has(driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS) && !d.break_.unadvertisedImplemented {
		return nil, status.Error(codes.Unimplemented, "GetVolumeIDs is not supported")
	}
	switch n := len(req.GetVolumes()); {
	case n == 0:
		return nil, d.invalid(req, "volumes is required")
	case n > refMaxVols:
		return nil, d.invalid(req, "volumes has %d entries, at most %d", n, refMaxVols)
	}
	resp := &driverv1alpha1.GetVolumeIDsResponse{}
	for i, pv := range req.GetVolumes() {
		if pv.GetName() == "" {
			return nil, d.invalid(req, "volumes[%d].name is required", i)
		}
		if id := refVolumeID(pv, d.break_.claimsForeignVolumes); id != "" {
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
	srv := grpc.NewServer()
	driverv1alpha1.RegisterIdentityServiceServer(srv, d)
	driverv1alpha1.RegisterMachineServiceServer(srv, d)
	served := make(chan struct{})
	var stop func()
	if d.break_.deadlineIgnored {
		var protocols http.Protocols
		protocols.SetUnencryptedHTTP2(true)
		hs := &http.Server{Handler: srv, Protocols: &protocols, ReadHeaderTimeout: 10 * time.Second}
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
