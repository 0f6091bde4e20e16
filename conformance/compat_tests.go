package conformance

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// unknownFieldNumber is a field number no revision of v1alpha1 uses: a field
// of a later revision, as an old driver sees it.
const unknownFieldNumber = 536870000

// addUnknownField appends a field of a later revision to each message.
func addUnknownField(msgs ...proto.Message) {
	for _, m := range msgs {
		r := m.ProtoReflect()
		raw := protowire.AppendTag(append([]byte(nil), r.GetUnknown()...), unknownFieldNumber, protowire.BytesType)
		raw = protowire.AppendString(raw, "a field of a later revision of machina.driver.v1alpha1")
		r.SetUnknown(raw)
	}
}

// testUnknownFields sends every RPC a request that carries fields the
// driver cannot know, at the top and in nested messages, as a newer core
// would (§3.2): each must be served as without them.
func testUnknownFields(s *suite, t T) {
	info := &driverv1alpha1.GetPluginInfoRequest{}
	addUnknownField(info)
	_, err := call(s, t, "GetPluginInfo", s.cfg.Timeouts.Identity, s.identity.GetPluginInfo, info)
	expectOK(t, ruleUnknownFields, "GetPluginInfo with an unknown field", err)
	probe := &driverv1alpha1.ProbeRequest{}
	addUnknownField(probe)
	_, err = call(s, t, "Probe", s.cfg.Timeouts.Identity, s.identity.Probe, probe)
	expectOK(t, ruleUnknownFields, "Probe with an unknown field", err)

	v := s.track(t, s.name("unknown-fields"))
	create := s.createRequest(v.name)
	addUnknownField(create, create.Machine, create.MachineClass)
	resp, err := s.createMachine(t, create)
	if err != nil {
		ruleUnknownFields.fatalf(t, "CreateMachine of %s with unknown fields in the request, machine and machine_class answered %s, want OK", v.name, describe(err))
	}
	s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
	st := s.statusRequest(v.name, v.providerID)
	addUnknownField(st, st.Machine, st.MachineClass)
	got, err := s.getMachineStatus(t, st)
	if expectOK(t, ruleUnknownFields, "GetMachineStatus of "+v.name+" with unknown fields", err) && got.GetProviderId() != v.providerID {
		ruleUnknownFields.errorf(t, "GetMachineStatus of %s with unknown fields returned provider ID %q, CreateMachine returned %q", v.name, got.GetProviderId(), v.providerID)
	}
	if s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
		list := s.listRequest()
		addUnknownField(list, list.MachineClass)
		_, err := s.listMachines(t, list)
		expectOK(t, ruleUnknownFields, "ListMachines with unknown fields", err)
	}
	if s.caps[driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS] {
		vols := &driverv1alpha1.GetVolumeIDsRequest{Volumes: s.sampleVolumes()}
		addUnknownField(vols, vols.Volumes[0])
		_, err := s.getVolumeIDs(t, vols)
		expectOK(t, ruleUnknownFields, "GetVolumeIDs with unknown fields", err)
	}
	caps := &driverv1alpha1.GetPluginCapabilitiesRequest{}
	addUnknownField(caps)
	_, err = call(s, t, "GetPluginCapabilities", s.cfg.Timeouts.Identity, s.identity.GetPluginCapabilities, caps)
	expectOK(t, ruleUnknownFields, "GetPluginCapabilities with an unknown field", err)
	if s.caps[driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE] {
		init := s.initializeRequest(v)
		addUnknownField(init, init.Machine, init.MachineClass)
		_, err := s.initializeMachine(t, init)
		expectOK(t, ruleUnknownFields, "InitializeMachine of "+v.name+" with unknown fields", err)
	}
	if s.caps[driverv1alpha1.Capability_TYPE_UPDATE_MACHINE] {
		// To its own class: a driver answers applied or needs_new_vm,
		// both OK.
		upd := s.updateRequest(v, s.cfg.MachineClass.ProviderSpec)
		addUnknownField(upd, upd.Machine, upd.MachineClass, upd.OldMachineClass)
		_, err := s.updateMachine(t, upd)
		expectOK(t, ruleUnknownFields, "UpdateMachine of "+v.name+" with unknown fields", err)
	}
	del := s.deleteRequest(v)
	addUnknownField(del, del.Machine, del.MachineClass)
	if _, err := s.deleteMachine(t, del); !expectOK(t, ruleUnknownFields, "DeleteMachine of "+v.name+" with unknown fields", err) {
		return
	}
	s.markDeleted(v)
	s.checkGone(t, ruleUnknownFields, v)
}

// withMetadata wraps a client method so that its calls carry metadata.
func withMetadata[Req, Resp proto.Message](f rpcFunc[Req, Resp], kv ...string) rpcFunc[Req, Resp] {
	return func(ctx context.Context, req Req, opts ...grpc.CallOption) (Resp, error) {
		return f(metadata.AppendToOutgoingContext(ctx, kv...), req, opts...)
	}
}

// unknownMetadata is what a core might add for tracing: a driver must
// ignore it (§2.4).
var unknownMetadata = []string{
	"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
	"x-machina-conformance-unknown", "a key of no meaning",
}

// testMetadata looks up the shared VM and asks for the identity with
// metadata the driver does not know, and without any (§2.4).
func testMetadata(s *suite, t T) {
	v := s.fixture(t)
	_, err := call(s, t, "GetMachineStatus", s.cfg.Timeouts.Status, s.machines.GetMachineStatus, s.statusRequest(v.name, v.providerID))
	expectOK(t, ruleNoMetadataNeeded, "GetMachineStatus of "+v.name+" without metadata", err)
	_, err = call(s, t, "GetMachineStatus", s.cfg.Timeouts.Status, withMetadata(s.machines.GetMachineStatus, unknownMetadata...), s.statusRequest(v.name, v.providerID))
	expectOK(t, ruleUnknownMetadata, fmt.Sprintf("GetMachineStatus of %s with metadata %v", v.name, unknownMetadata), err)
	_, err = call(s, t, "Probe", s.cfg.Timeouts.Identity, withMetadata(s.identity.Probe, unknownMetadata...), &driverv1alpha1.ProbeRequest{})
	expectOK(t, ruleUnknownMetadata, "Probe with unknown metadata", err)
}

// testOptionalUnset creates, looks up and deletes a machine with every
// OPTIONAL field of Machine and MachineClass unset, and no user data
// (§4.1): what the orphan collector and a minimal core send.
func testOptionalUnset(s *suite, t T) {
	v := s.track(t, s.name("minimal"))
	class := &driverv1alpha1.MachineClass{
		Name: s.cfg.MachineClass.Name, Namespace: s.cfg.Namespace,
		ProviderSpec: append([]byte(nil), s.cfg.MachineClass.ProviderSpec...),
	}
	resp, err := s.createMachine(t, &driverv1alpha1.CreateMachineRequest{
		Machine: s.minimalMachine(v.name, ""), MachineClass: class, Secrets: s.secrets(),
	})
	if err != nil {
		ruleOptionalUnset.fatalf(t, "CreateMachine of %s with only machine.name, machine.namespace and the class's name, namespace and provider_spec answered %s, want OK", v.name, describe(err))
	}
	s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
	st, err := s.getMachineStatus(t, &driverv1alpha1.GetMachineStatusRequest{
		Machine: s.minimalMachine(v.name, ""), MachineClass: proto.Clone(class).(*driverv1alpha1.MachineClass), Secrets: s.secrets(),
	})
	if expectOK(t, ruleOptionalUnset, "GetMachineStatus of "+v.name+" with only machine.name and machine.namespace", err) && st.GetProviderId() != v.providerID {
		ruleOptionalUnset.errorf(t, "GetMachineStatus of %s returned provider ID %q, CreateMachine returned %q", v.name, st.GetProviderId(), v.providerID)
	}
	_, err = s.deleteMachine(t, &driverv1alpha1.DeleteMachineRequest{
		Machine: s.minimalMachine(v.name, v.providerID), MachineClass: proto.Clone(class).(*driverv1alpha1.MachineClass), Secrets: s.secrets(),
	})
	if expectOK(t, ruleOptionalUnset, "DeleteMachine of "+v.name+" with only name, namespace and provider_id", err) {
		s.markDeleted(v)
		s.checkGone(t, ruleDeleteRemoves, v)
	}
}

// testIgnoredFields repeats CreateMachine for the shared VM, each time with
// one thing changed that a driver must not compare (§4.9, §6.1.3): the
// answer is the same VM.
func testIgnoredFields(s *suite, t T) {
	v := s.fixture(t)
	for _, c := range []struct {
		what   string
		r      rule
		mutate func(*driverv1alpha1.CreateMachineRequest)
	}{
		{"another machine.uid", ruleUIDNotKey, func(r *driverv1alpha1.CreateMachineRequest) {}},
		{"other labels and annotations", ruleNotCompared, func(r *driverv1alpha1.CreateMachineRequest) {
			r.Machine.Labels["conformance.machina.io/changed"] = "true"
			r.Machine.Annotations = map[string]string{"conformance.machina.io/changed": "true"}
		}},
		{"other user_data", ruleNotCompared, func(r *driverv1alpha1.CreateMachineRequest) {
			r.UserData = append(append([]byte(nil), r.UserData...), "\n# renewed bootstrap token\n"...)
		}},
		{"no last_known_state", ruleNotCompared, func(r *driverv1alpha1.CreateMachineRequest) { r.LastKnownState = "" }},
	} {
		// createRequest gives every call a new UID; the other cases
		// change one more thing.
		req := s.createRequest(v.name)
		req.LastKnownState = v.lastKnownState
		c.mutate(req)
		resp, err := s.createMachine(t, req)
		switch {
		case err != nil:
			c.r.errorf(t, "CreateMachine of the existing machine %s with %s answered %s, want OK with its VM %s", v.name, c.what, describe(err), v.providerID)
		case resp.GetProviderId() != v.providerID:
			c.r.errorf(t, "CreateMachine of the existing machine %s with %s returned provider ID %q, want its VM %q", v.name, c.what, resp.GetProviderId(), v.providerID)
		default:
			s.record(v, "", "", resp.GetLastKnownState())
		}
	}
	s.checkOneVM(t, ruleCreateOneVM, v)
}
