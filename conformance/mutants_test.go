package conformance_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// refRequiredKeys are the secret keys refDriver needs to create a VM; the
// suite's configuration (refConfig) sends them.
var refRequiredKeys = []string{"endpoint", "token"}

// mutation lists contract violations of refDriver that live in a gRPC
// interceptor around the correct driver, so that each breaks one sentence
// of the spec and nothing else; breakage lists those inside the driver.
// Several break a rule only in a subtle case: on the second call, above
// two concurrent callers, after a delete and a re-create, in an encoded
// form.
type mutation struct {
	rejectsUnknownFields   bool // a request with unknown fields answers INVALID_ARGUMENT
	rejectsUnknownMetadata bool // metadata other than gRPC's own answers INVALID_ARGUMENT
	requiresMetadata       bool // GetMachineStatus without a traceparent answers INVALID_ARGUMENT
	requiresUID            bool // machine.uid missing answers INVALID_ARGUMENT
	uidCompared            bool // a repeated create with another uid answers ALREADY_EXISTS
	labelsCompared         bool // a repeated create with other labels answers ALREADY_EXISTS
	longNameRejected       bool // machine names over 63 characters answer INVALID_ARGUMENT
	longNameTruncated      bool // machine names are cut to 240 characters
	batchLimited           bool // more than 100 volumes answer INVALID_ARGUMENT
	smallRecvLimit         bool // the server takes requests of at most 1 MiB
	keysLumped             bool // a missing secret key answers INVALID_ARGUMENT without naming it
	onlyFirstKeyChecked    bool // only the first required key is checked; the other fails at the "provider"
	secretEchoedBase64     bool // error messages carry the request's secrets, base64-encoded
	secretInStateHex       bool // last_known_state carries the canary, hex-encoded
	probeErrors            bool // every third Probe answers INTERNAL
	neverReady             bool // Probe answers ready=false, always
	capsChangeLate         bool // GetPluginCapabilities drops a capability from its fourth call on
	capsCallFails          bool // GetPluginCapabilities answers INTERNAL from its second call on
	nodeNameDrift          bool // every second GetMachineStatus of a machine returns another node name
	statusSecondNotFound   bool // every second GetMachineStatus of a machine answers NOT_FOUND
	statusUnimplemented    bool // GetMachineStatus answers UNIMPLEMENTED, as MCM allowed
	initProviderIDWrong    bool // InitializeMachine answers another provider ID
	initSecondCallFails    bool // a second InitializeMachine of a machine answers FAILED_PRECONDITION
	initIgnoresProviderID  bool // InitializeMachine initializes the machine's VM whatever provider_id says
	deleteSecondCallFails  bool // a second DeleteMachine of a machine answers INTERNAL
	failsAboveTwo          bool // more than two MachineService calls in flight answer INTERNAL
	racyCreate             bool // concurrent creates of one machine each make a VM
	recreateSeesDeleted    bool // after a delete and re-create, a lookup by name counts the deleted VM
	reusesProviderID       bool // a re-created machine's VM gets the deleted VM's provider ID
	sharedProviderIDs      bool // provider IDs come from the name's length, so VMs share them
	listPrefixScope        bool // ListMachines also lists classes whose name is a prefix of the requested one
	listOtherNamespace     bool // ListMachines lists the class name's VMs of every namespace
	specArrayAccepted      bool // a provider_spec that is a JSON array is taken as {}
	volumeSpecAccepted     bool // a volume spec that is not JSON is taken as {}
	emptyVolumesOK         bool // GetVolumeIDs without volumes answers OK
	classNameCompared      bool // GetMachineStatus finds no VM when the class name differs
	namespaceIgnored       bool // a lookup finds the name's VM in any namespace
	resetsStreams          bool // a call with a short deadline is reset at once, before the deadline
	listEntryNoProviderID  bool // ListMachines entries carry no provider_id
	badNodeName            bool // CreateMachine returns a node name that is no DNS-1123 subdomain
	bigManifest            bool // GetPluginInfo.manifest has 17 entries
	twiceListedProvider    bool // GetPluginInfo.providers lists a value twice
	createFails            bool // CreateMachine of a new machine whose name ends in -create answers INTERNAL
	initUnknownInternal    bool // InitializeMachine of a VM that does not exist answers INTERNAL
	deleteFailsFirst       bool // the first DeleteMachine of an existing VM answers INTERNAL
	needsInitWithoutCap    bool // GetMachineStatus says needs_initialization=true without the capability
	volumeDuplicates       bool // GetVolumeIDs answers twice for every volume it maps
	conflictInternal       bool // a call for a machine with another call in flight answers INTERNAL, not ABORTED

	// hook is a clause mutant (mutants_clause_test.go): a function around
	// the driver with the mutations above.
	hook hookFunc
	// overHTTP serves the driver through net/http, whose transport leaves
	// deadlines to the handler (see serveRef), for hooks that ignore them.
	overHTTP bool
	// leavesVMs is set for mutants that make the suite's cleanup
	// impossible (a DeleteMachine that never works, a provider ID the
	// driver does not know): the VMs stay, which the test then allows.
	leavesVMs bool
}

// mutationState is what the stateful mutations remember.
type mutationState struct {
	mu       sync.Mutex
	calls    map[string]int    // by RPC and machine name
	uids     map[string]string // first uid per machine name
	labels   map[string]string // first labels per machine name
	deleted  map[string]string // the last deleted provider ID per machine name
	inflight int
	// crowded is closed once a third call was in flight (failsAboveTwo).
	crowded chan struct{}
}

func (m *mutationState) count(key string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.calls == nil {
		m.calls = map[string]int{}
	}
	m.calls[key]++
	return m.calls[key]
}

// serverOptions are the server options of a mutation.
func (m mutation) serverOptions() []grpc.ServerOption {
	if m.smallRecvLimit {
		return []grpc.ServerOption{grpc.MaxRecvMsgSize(1 << 20)}
	}
	return nil
}

// wrapHTTP wraps the driver served through net/http, for resetsStreams:
// a call that carries a deadline is aborted at once, which net/http turns
// into an RST_STREAM before the deadline.
func (m mutation) wrapHTTP(h http.Handler) http.Handler {
	if !m.resetsStreams {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Only the deadline check's short deadline (300ms): the suite's
		// ordinary calls have deadlines of seconds.
		if t, ok := grpcTimeout(r.Header.Get("grpc-timeout")); ok && t < time.Second && strings.HasSuffix(r.URL.Path, "/Probe") {
			panic(http.ErrAbortHandler)
		}
		h.ServeHTTP(w, r)
	})
}

// grpcTimeout parses a grpc-timeout header: digits and a unit.
func grpcTimeout(v string) (time.Duration, bool) {
	if len(v) < 2 {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil {
		return 0, false
	}
	unit := map[byte]time.Duration{'H': time.Hour, 'M': time.Minute, 'S': time.Second, 'm': time.Millisecond, 'u': time.Microsecond, 'n': time.Nanosecond}[v[len(v)-1]]
	return time.Duration(n) * unit, unit != 0
}

// machineOf returns the Machine of a request, if it has one.
func machineOf(req any) *driverv1alpha1.Machine {
	if r, ok := req.(interface {
		GetMachine() *driverv1alpha1.Machine
	}); ok {
		return r.GetMachine()
	}
	return nil
}

// hasUnknown reports whether m or a message inside it has unknown fields.
func hasUnknown(m protoreflect.Message) bool {
	if len(m.GetUnknown()) > 0 {
		return true
	}
	found := false
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				found = found || hasUnknown(v.List().Get(i).Message())
			}
		case fd.Message() != nil && !fd.IsMap():
			found = hasUnknown(v.Message())
		}
		return !found
	})
	return found
}

// mutate is refDriver's interceptor: the check of the required secret keys
// (correct behaviour), then the mutations.
func (d *refDriver) mutate(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if h := d.mut.hook; h != nil {
		return h(d, ctx, path.Base(info.FullMethod), req, func() (any, error) { return d.mutateCall(ctx, req, info, handler) })
	}
	resp, err := d.mutateCall(ctx, req, info, handler)
	if err != nil && d.mut.secretEchoedBase64 {
		if r, ok := req.(interface{ GetSecrets() map[string][]byte }); ok {
			var raw []string
			for k, v := range r.GetSecrets() {
				raw = append(raw, k+"="+string(v))
			}
			s := status.Convert(err)
			return nil, status.Errorf(s.Code(), "%s (request secrets %s)", s.Message(), base64.StdEncoding.EncodeToString([]byte(strings.Join(raw, ";"))))
		}
	}
	return resp, err
}

func (d *refDriver) mutateCall(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	m, st := d.mut, &d.mutState
	rpc := path.Base(info.FullMethod)
	name := machineOf(req).GetName()
	if create, ok := req.(*driverv1alpha1.CreateMachineRequest); ok && name != "" {
		for i, k := range refRequiredKeys {
			if _, ok := create.GetSecrets()[k]; ok {
				continue
			}
			switch {
			case m.keysLumped:
				return nil, status.Error(codes.InvalidArgument, "the credentials are incomplete")
			case m.onlyFirstKeyChecked && i > 0:
				return nil, status.Error(codes.Unauthenticated, "the provider rejected the credentials")
			}
			return nil, status.Errorf(codes.InvalidArgument, "secrets[%q] is required", k)
		}
	}
	if m.rejectsUnknownFields && hasUnknown(req.(proto.Message).ProtoReflect()) {
		return nil, status.Error(codes.InvalidArgument, "the request has unknown fields")
	}
	if md, _ := metadata.FromIncomingContext(ctx); m.rejectsUnknownMetadata || m.requiresMetadata {
		for _, k := range slices.Sorted(maps.Keys(md)) { // sorted: the rejected key must not depend on map order
			if m.rejectsUnknownMetadata && !strings.HasPrefix(k, ":") && !strings.HasPrefix(k, "grpc-") && k != "content-type" && k != "user-agent" && k != "te" {
				return nil, status.Errorf(codes.InvalidArgument, "unknown metadata %q", k)
			}
		}
		if m.requiresMetadata && rpc == "GetMachineStatus" && len(md.Get("traceparent")) == 0 {
			return nil, status.Error(codes.InvalidArgument, "metadata traceparent is required")
		}
	}
	if mm := machineOf(req); mm != nil && m.requiresUID && mm.GetUid() == "" && name != "" {
		return nil, status.Error(codes.InvalidArgument, "machine.uid is required")
	}
	if mm := machineOf(req); mm != nil && m.longNameTruncated && len(mm.GetName()) > 240 {
		mm.Name = mm.GetName()[:240]
	}
	if m.longNameRejected && len(name) > 63 {
		return nil, status.Errorf(codes.InvalidArgument, "machine.name %s is longer than 63 characters", name)
	}
	if strings.HasPrefix(info.FullMethod, "/machina.driver.v1alpha1.MachineService/") && m.failsAboveTwo {
		st.mu.Lock()
		st.inflight++
		n := st.inflight
		st.mu.Unlock()
		defer func() { st.mu.Lock(); st.inflight--; st.mu.Unlock() }()
		st.mu.Lock()
		if st.crowded == nil {
			st.crowded = make(chan struct{})
		}
		crowded := st.crowded
		if n > 2 {
			select {
			case <-crowded:
			default:
				close(crowded)
			}
		}
		st.mu.Unlock()
		if n > 2 {
			return nil, status.Error(codes.Internal, "too many calls at once")
		}
		// A create takes the time of a provider request, so that creates
		// sent together are in flight together; one that finds another
		// call in flight waits up to 2 s for a third, however late a loaded
		// machine schedules the callers.
		if rpc == "CreateMachine" {
			hold := 150 * time.Millisecond
			if n == 2 {
				hold = 2 * time.Second
			}
			select {
			case <-crowded:
			case <-time.After(hold):
			case <-ctx.Done():
			}
		}
	}
	if m.namespaceIgnored {
		if mm := machineOf(req); mm != nil {
			d.mu.Lock()
			for _, v := range d.vms {
				if v.name == mm.GetName() && !v.deleted {
					mm.Namespace = v.namespace
				}
			}
			d.mu.Unlock()
		}
	}

	switch r := req.(type) {
	case *driverv1alpha1.GetPluginInfoRequest:
		resp, err := handler(ctx, req)
		if c, ok := resp.(*driverv1alpha1.GetPluginInfoResponse); ok && m.bigManifest {
			for i := range 17 {
				c.Manifest[fmt.Sprintf("k%02d", i)] = "v"
			}
		}
		if c, ok := resp.(*driverv1alpha1.GetPluginInfoResponse); ok && m.twiceListedProvider {
			c.Providers = append(c.Providers, "inmemory", "inmemory")
		}
		return resp, err
	case *driverv1alpha1.ProbeRequest:
		n := st.count("Probe")
		if m.probeErrors && n%3 == 0 {
			return nil, status.Error(codes.Internal, "probe of the provider failed")
		}
		if m.neverReady {
			return &driverv1alpha1.ProbeResponse{Ready: wrapperspb.Bool(false)}, nil
		}
	case *driverv1alpha1.GetPluginCapabilitiesRequest:
		n := st.count("GetPluginCapabilities")
		if m.capsCallFails && n >= 2 {
			return nil, status.Error(codes.Internal, "capabilities unknown")
		}
		resp, err := handler(ctx, req)
		if c, ok := resp.(*driverv1alpha1.GetPluginCapabilitiesResponse); ok {
			if m.capsChangeLate && n >= 4 && len(c.Capabilities) > 0 {
				c.Capabilities = c.Capabilities[:len(c.Capabilities)-1]
			}
		}
		return resp, err
	case *driverv1alpha1.CreateMachineRequest:
		if err := d.mutateCreate(r, m, st); err != nil {
			return nil, err
		}
		if m.specArrayAccepted && strings.HasPrefix(strings.TrimSpace(string(r.GetMachineClass().GetProviderSpec())), "[") {
			r.MachineClass.ProviderSpec = []byte("{}")
		}
		if m.conflictInternal {
			// A slow create that a second call for the machine meets
			// in flight, answered with the wrong code.
			if st.count("CreateMachine/inflight/"+name)%2 == 0 {
				return nil, status.Errorf(codes.Internal, "machine %s: operation in progress", name)
			}
			defer st.count("CreateMachine/inflight/" + name)
			time.Sleep(150 * time.Millisecond)
		}
		if m.racyCreate {
			return d.racyCreate(ctx, r)
		}
		if m.createFails && strings.HasSuffix(name, "-create") && len(d.liveOf(name)) == 0 {
			return nil, status.Errorf(codes.Internal, "machine %s: the provider returned an unexpected answer", name)
		}
		resp, err := handler(ctx, req)
		if c, ok := resp.(*driverv1alpha1.CreateMachineResponse); ok && err == nil {
			d.mutateCreateResponse(r, c, m, st)
		}
		return resp, err
	case *driverv1alpha1.GetMachineStatusRequest:
		n := st.count("GetMachineStatus/" + name)
		switch {
		case m.statusUnimplemented:
			return nil, status.Error(codes.Unimplemented, "GetMachineStatus is not supported")
		case m.statusSecondNotFound && n%2 == 0:
			return nil, status.Errorf(codes.NotFound, "machine %s has no VM", name)
		case m.classNameCompared && r.GetMachineClass().GetName() != refConfig("").MachineClass.Name:
			return nil, status.Errorf(codes.NotFound, "machine %s has no VM of class %s", name, r.GetMachineClass().GetName())
		case m.recreateSeesDeleted && r.GetMachine().GetProviderId() == "":
			st.mu.Lock()
			_, was := st.deleted[name]
			st.mu.Unlock()
			if was && len(d.liveOf(name)) > 0 {
				return nil, status.Errorf(codes.FailedPrecondition, "machine %s has several VMs", name)
			}
		}
		resp, err := handler(ctx, req)
		if c, ok := resp.(*driverv1alpha1.GetMachineStatusResponse); ok && err == nil {
			if m.nodeNameDrift && n%2 == 0 {
				c.NodeName += "-2"
			}
			if m.needsInitWithoutCap {
				c.NeedsInitialization = true
			}
		}
		return resp, err
	case *driverv1alpha1.InitializeMachineRequest:
		n := st.count("InitializeMachine/" + name)
		if m.initSecondCallFails && n == 2 {
			return nil, status.Errorf(codes.FailedPrecondition, "machine %s is initialized already", name)
		}
		live := d.liveOf(name)
		if m.initIgnoresProviderID && len(live) > 0 {
			r.Machine.ProviderId = live[0]
		}
		if m.initUnknownInternal && len(live) == 0 && name != "" && r.GetMachine().GetProviderId() != "" {
			return nil, status.Errorf(codes.Internal, "machine %s: lookup failed", name)
		}
		resp, err := handler(ctx, req)
		if c, ok := resp.(*driverv1alpha1.InitializeMachineResponse); ok && err == nil && m.initProviderIDWrong {
			c.ProviderId += "-initialized"
		}
		return resp, err
	case *driverv1alpha1.DeleteMachineRequest:
		live := d.liveOf(name)
		if len(live) == 0 && m.deleteSecondCallFails && st.count("DeleteMachine/gone/"+name) == 2 {
			return nil, status.Errorf(codes.Internal, "machine %s: deletion in progress", name)
		}
		// Only the orphan collector's request (no uid) meets it.
		if len(live) > 0 && m.deleteFailsFirst && r.GetMachine().GetUid() == "" && st.count("DeleteMachine/live/"+strings.Join(live, ",")) == 1 {
			return nil, status.Errorf(codes.Internal, "machine %s: the provider refused the deletion for now", name)
		}
		resp, err := handler(ctx, req)
		if err == nil && len(live) > 0 {
			st.mu.Lock()
			if st.deleted == nil {
				st.deleted = map[string]string{}
			}
			st.deleted[name] = live[0]
			st.mu.Unlock()
		}
		return resp, err
	case *driverv1alpha1.ListMachinesRequest:
		resp, err := handler(ctx, req)
		if c, ok := resp.(*driverv1alpha1.ListMachinesResponse); ok && err == nil && (m.listPrefixScope || m.listOtherNamespace) {
			class := r.GetMachineClass()
			d.mu.Lock()
			for _, v := range d.vms {
				prefix := m.listPrefixScope && v.class != class.GetName() && strings.HasPrefix(class.GetName(), v.class) && v.namespace == class.GetNamespace()
				otherNS := m.listOtherNamespace && v.class == class.GetName() && v.namespace != class.GetNamespace()
				if !v.deleted && (prefix || otherNS) {
					c.Machines = append(c.Machines, &driverv1alpha1.ListedMachine{ProviderId: v.providerID, MachineName: v.name})
				}
			}
			d.mu.Unlock()
		}
		if c, ok := resp.(*driverv1alpha1.ListMachinesResponse); ok && err == nil && m.listEntryNoProviderID {
			for _, e := range c.Machines {
				e.ProviderId = ""
			}
		}
		return resp, err
	case *driverv1alpha1.GetVolumeIDsRequest:
		switch {
		case m.emptyVolumesOK && len(r.GetVolumes()) == 0:
			return &driverv1alpha1.GetVolumeIDsResponse{}, nil
		case m.batchLimited && len(r.GetVolumes()) > 100:
			return nil, status.Errorf(codes.InvalidArgument, "volumes: at most 100 volumes per call, got %d", len(r.GetVolumes()))
		}
		if m.volumeSpecAccepted {
			for _, pv := range r.GetVolumes() {
				if !json.Valid(pv.GetSpec()) {
					pv.Spec = []byte("{}")
				}
			}
		}
		if m.volumeDuplicates {
			resp, err := handler(ctx, req)
			if c, ok := resp.(*driverv1alpha1.GetVolumeIDsResponse); ok && err == nil {
				c.VolumeIds = append(c.VolumeIds, c.VolumeIds...)
			}
			return resp, err
		}
	}
	return handler(ctx, req)
}

// mutateCreate applies the mutations that refuse a repeated create.
func (d *refDriver) mutateCreate(r *driverv1alpha1.CreateMachineRequest, m mutation, st *mutationState) error {
	name := r.GetMachine().GetName()
	labels := fmt.Sprint(r.GetMachine().GetLabels(), r.GetMachine().GetAnnotations())
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.uids == nil {
		st.uids, st.labels = map[string]string{}, map[string]string{}
	}
	if len(d.liveOf(name)) == 0 {
		st.uids[name], st.labels[name] = r.GetMachine().GetUid(), labels
		return nil
	}
	if m.uidCompared && st.uids[name] != r.GetMachine().GetUid() {
		return status.Errorf(codes.AlreadyExists, "machine %s has a VM of another Machine (uid %s)", name, st.uids[name])
	}
	if m.labelsCompared && st.labels[name] != labels {
		return status.Errorf(codes.AlreadyExists, "machine %s has a VM with other labels", name)
	}
	return nil
}

// mutateCreateResponse applies the mutations of a created VM's identity.
func (d *refDriver) mutateCreateResponse(r *driverv1alpha1.CreateMachineRequest, c *driverv1alpha1.CreateMachineResponse, m mutation, st *mutationState) {
	name := r.GetMachine().GetName()
	if m.secretInStateHex {
		c.LastKnownState = strings.TrimSuffix(c.LastKnownState, "}") + fmt.Sprintf(`,"t":%q}`, hex.EncodeToString(r.GetSecrets()["machina-conformance-canary"]))
	}
	newID := ""
	st.mu.Lock()
	if old, ok := st.deleted[name]; ok && m.reusesProviderID {
		newID = old
	}
	st.mu.Unlock()
	if m.badNodeName {
		c.NodeName = "Node_" + strings.ToUpper(name)
	}
	if m.sharedProviderIDs {
		newID = fmt.Sprintf("reference:///len-%d", len(name))
	}
	if newID == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, v := range d.vms {
		if v.providerID == c.ProviderId {
			v.providerID = newID
		}
	}
	c.ProviderId = newID
	c.LastKnownState = fmt.Sprintf(`{"VM":%q}`, newID)
}

// racyCreate creates without the driver's per-machine lock, looking for
// the VM before a slow provider call and creating it after: concurrent
// calls each create one.
func (d *refDriver) racyCreate(ctx context.Context, r *driverv1alpha1.CreateMachineRequest) (any, error) {
	// The driver's own validation first: only the creation races.
	if err := d.checkMachine(r, r.GetMachine()); err != nil {
		return nil, err
	}
	if err := d.checkClass(r, r.GetMachineClass()); err != nil {
		return nil, err
	}
	if r.GetMachineClass().GetNamespace() != r.GetMachine().GetNamespace() {
		return nil, status.Error(codes.InvalidArgument, "machine_class.namespace must equal machine.namespace")
	}
	if _, err := d.canonicalSpec(r, r.GetMachineClass().GetProviderSpec()); err != nil {
		return nil, err
	}
	if live := d.liveOf(r.GetMachine().GetName()); len(live) > 0 {
		return &driverv1alpha1.CreateMachineResponse{ProviderId: live[0], NodeName: r.GetMachine().GetName(), LastKnownState: fmt.Sprintf(`{"VM":%q}`, live[0])}, nil
	}
	// The slow provider call between the lookup and the creation.
	time.Sleep(100 * time.Millisecond)
	spec, err := d.canonicalSpec(r, r.GetMachineClass().GetProviderSpec())
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	v := d.newVM(ctx, r, spec)
	d.mu.Unlock()
	return &driverv1alpha1.CreateMachineResponse{ProviderId: v.providerID, NodeName: v.name, LastKnownState: fmt.Sprintf(`{"VM":%q}`, v.providerID)}, nil
}

// liveOf returns the provider IDs of the machine name's live VMs.
func (d *refDriver) liveOf(name string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, v := range d.vms {
		if v.name == name && !v.deleted {
			out = append(out, v.providerID)
		}
	}
	return out
}
