package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Size limits of the Driver API (§4).
const (
	maxNameLen         = 253
	maxProviderSpec    = 256 << 10
	maxSecretEntries   = 64
	maxUserData        = 1 << 20
	maxProviderIDLen   = 2048
	maxLastKnownState  = 64 << 10
	maxPluginNameLen   = 63
	maxManifestEntries = 16
	maxManifestLen     = 128
)

// dnsSubdomain is the DNS-1123 subdomain rule for machine and node names.
var dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// checkCreateResponse checks the fields every successful CreateMachine
// returns.
func (s *suite) checkCreateResponse(t T, name string, resp *driverv1alpha1.CreateMachineResponse) {
	t.Helper()
	checkProviderID(t, ruleCreateResponse, "CreateMachine of "+name, resp.GetProviderId())
	checkNodeName(t, ruleCreateResponse, "CreateMachine of "+name, resp.GetNodeName())
	if n := len(resp.GetLastKnownState()); n > maxLastKnownState {
		ruleCreateResponse.errorf(t, "CreateMachine of %s returned a last_known_state of %d bytes, more than 64 KiB", name, n)
	}
}

func checkProviderID(t T, r rule, what, id string) {
	t.Helper()
	switch {
	case id == "":
		r.errorf(t, "%s returned an empty provider_id", what)
	case len(id) > maxProviderIDLen:
		r.errorf(t, "%s returned a provider_id of %d bytes, more than %d", what, len(id), maxProviderIDLen)
	}
}

func checkNodeName(t T, r rule, what, name string) {
	t.Helper()
	switch {
	case name == "":
		r.errorf(t, "%s returned an empty node_name", what)
	case len(name) > maxNameLen || !dnsSubdomain.MatchString(name):
		r.errorf(t, "%s returned node_name %q, which is not a DNS-1123 subdomain", what, name)
	}
}

// invalidCreate is one CreateMachine request with a missing or invalid
// REQUIRED field.
type invalidCreate struct {
	name  string // subtest name
	field string // the field path the error message must name
	// mutate breaks a valid request.
	mutate func(s *suite, req *driverv1alpha1.CreateMachineRequest)
}

var invalidCreates = []invalidCreate{
	{"machine_missing", "machine", func(_ *suite, r *driverv1alpha1.CreateMachineRequest) { r.Machine = nil }},
	{"machine.name_missing", "machine.name", func(_ *suite, r *driverv1alpha1.CreateMachineRequest) { r.Machine.Name = "" }},
	{"machine.name_not_dns_subdomain", "machine.name", func(s *suite, r *driverv1alpha1.CreateMachineRequest) {
		r.Machine.Name = s.name("Not_A_DNS_Name")
	}},
	{"machine.name_too_long", "machine.name", func(s *suite, r *driverv1alpha1.CreateMachineRequest) {
		r.Machine.Name = s.name(strings.Repeat("x", maxNameLen+1-len(s.prefix)))
	}},
	{"machine.namespace_missing", "machine.namespace", func(_ *suite, r *driverv1alpha1.CreateMachineRequest) { r.Machine.Namespace = "" }},
	{"machine_class_missing", "machine_class", func(_ *suite, r *driverv1alpha1.CreateMachineRequest) { r.MachineClass = nil }},
	{"machine_class.name_missing", "machine_class.name", func(_ *suite, r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.Name = "" }},
	{"machine_class.provider_spec_missing", "machine_class.provider_spec", func(_ *suite, r *driverv1alpha1.CreateMachineRequest) {
		r.MachineClass.ProviderSpec = nil
	}},
	{"machine_class.provider_spec_not_json", "machine_class.provider_spec", func(_ *suite, r *driverv1alpha1.CreateMachineRequest) {
		r.MachineClass.ProviderSpec = []byte("{not json")
	}},
	{"machine_class.provider_spec_not_an_object", "machine_class.provider_spec", func(_ *suite, r *driverv1alpha1.CreateMachineRequest) {
		r.MachineClass.ProviderSpec = []byte(`["a","b"]`)
	}},
	{"machine_class.provider_spec_too_large", "machine_class.provider_spec", func(s *suite, r *driverv1alpha1.CreateMachineRequest) {
		r.MachineClass.ProviderSpec = padObject(s.cfg.MachineClass.ProviderSpec, maxProviderSpec+1)
	}},
	{"secrets_too_many", "secrets", func(_ *suite, r *driverv1alpha1.CreateMachineRequest) {
		for i := 0; len(r.Secrets) <= maxSecretEntries; i++ {
			r.Secrets[fmt.Sprintf("extra-%d", i)] = []byte("x")
		}
	}},
	{"user_data_too_large", "user_data", func(s *suite, r *driverv1alpha1.CreateMachineRequest) {
		r.UserData = []byte(strings.Repeat(s.canary, maxUserData/len(s.canary)+1))
	}},
}

// padObject returns spec with a "padding" key that makes it at least size
// bytes: still a valid JSON object, only too large.
func padObject(spec json.RawMessage, size int) []byte {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(spec, &obj)
	if obj == nil {
		obj = map[string]json.RawMessage{}
	}
	obj["machinaConformancePadding"] = json.RawMessage(`"` + strings.Repeat("p", size) + `"`)
	b, _ := json.Marshal(obj)
	return b
}

// testCreateInvalidArguments sends CreateMachine requests that each break
// one REQUIRED field (§4), all carrying the canary in secrets and user_data.
func testCreateInvalidArguments(s *suite, t T) {
	var rejected []string
	for _, c := range invalidCreates {
		t.Run(c.name, func(t T) {
			req := s.createRequest(s.name("invalid"))
			req.UserData = []byte(s.canary)
			c.mutate(s, req)
			if n := req.GetMachine().GetName(); n != "" && strings.HasPrefix(n, s.prefix) {
				rejected = append(rejected, n)
				if dnsSubdomain.MatchString(n) && len(n) <= maxNameLen {
					// A valid name: should the driver wrongly create a
					// VM, the cleanup deletes it.
					s.track(t, n)
				}
			}
			_, err := s.createMachine(t, req)
			expectInvalidArgument(t, "CreateMachine with "+strings.ReplaceAll(c.name, "_", " "), err, c.field)
		})
	}
	s.checkNoVM(t, rejected)
}

// expectInvalidArgument checks that err is INVALID_ARGUMENT and that its
// message names the field.
func expectInvalidArgument(t T, what string, err error, field string) {
	t.Helper()
	if !expectCode(t, ruleRequiredFields, what, err, codes.InvalidArgument) {
		return
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, field) {
		ruleRequiredFields.errorf(t, "%s: the message %q does not name the field %s", what, msg, field)
	}
}

// checkNoVM fails t if ListMachines shows a VM for any of names, each of
// which the driver rejected.
func (s *suite) checkNoVM(t T, names []string) {
	t.Helper()
	if !s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] || len(names) == 0 {
		return
	}
	listed, err := s.listOwn(t)
	if err != nil {
		t.Logf("cannot check that rejected requests created no VM: ListMachines answered %s", describe(err))
		return
	}
	for _, n := range names {
		if ids := listed[n]; len(ids) > 0 {
			ruleNoVMOnReject.errorf(t, "ListMachines lists %s (%v), a machine whose CreateMachine answered INVALID_ARGUMENT", n, ids)
		}
	}
}

// testCreateSuccess creates a VM and checks the response (§6.1).
func testCreateSuccess(s *suite, t T) {
	v := s.createVM(t, "create")
	t.Logf("created %s: provider ID %q, node name %q", v.name, v.providerID, v.nodeName)
}

// testCreateIdempotent repeats a CreateMachine and checks that every call
// returns the same VM and that exactly one VM exists (§6.1).
func testCreateIdempotent(s *suite, t T) {
	v := s.track(t, s.name("idempotent"))
	req := s.createRequest(v.name)
	first, err := s.createMachine(t, req)
	if err != nil {
		ruleCreateOK.fatalf(t, "CreateMachine of %s answered %s", v.name, describe(err))
	}
	s.checkCreateResponse(t, v.name, first)
	s.record(v, first.GetProviderId(), first.GetNodeName(), first.GetLastKnownState())
	last := first
	for i := 2; i <= s.cfg.IdempotentCount+1; i++ {
		again := proto.Clone(req).(*driverv1alpha1.CreateMachineRequest)
		// The core sends the stored last_known_state, except after a
		// create timed out before any answer: try both.
		if i%2 == 0 {
			again.LastKnownState = last.GetLastKnownState()
		}
		resp, err := s.createMachine(t, again)
		if err != nil {
			ruleCreateIdempotent.errorf(t, "call #%d for the existing machine %s answered %s, want OK", i, v.name, describe(err))
			continue
		}
		if resp.GetProviderId() != first.GetProviderId() {
			ruleCreateIdempotent.errorf(t, "call #%d returned provider ID %q, call #1 returned %q", i, resp.GetProviderId(), first.GetProviderId())
		}
		if resp.GetNodeName() != first.GetNodeName() {
			ruleCreateIdempotent.errorf(t, "call #%d returned node name %q, call #1 returned %q", i, resp.GetNodeName(), first.GetNodeName())
		}
		s.record(v, "", "", resp.GetLastKnownState())
		last = resp
	}
	s.checkOneVM(t, ruleCreateOneVM, v)
}

// checkOneVM checks, when ListMachines is advertised, that exactly one VM
// exists for v and that it has v's provider ID.
func (s *suite) checkOneVM(t T, r rule, v *vm) {
	t.Helper()
	if !s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
		return
	}
	listed, err := s.listOwn(t)
	if err != nil {
		ruleListContains.errorf(t, "ListMachines answered %s", describe(err))
		return
	}
	ids := listed[v.name]
	switch {
	case len(ids) != 1:
		r.errorf(t, "ListMachines lists %d VMs for %s (%v), want exactly 1", len(ids), v.name, ids)
	case ids[0] != v.providerID:
		r.errorf(t, "ListMachines lists %s with provider ID %q, CreateMachine returned %q", v.name, ids[0], v.providerID)
	}
}

// testCreateIncompatible repeats a CreateMachine with a different
// provider_spec: ALREADY_EXISTS, and the existing VM is kept (§6.1).
func testCreateIncompatible(s *suite, t T) {
	v := s.createVM(t, "incompatible")
	req := s.createRequest(v.name)
	req.MachineClass.ProviderSpec = append([]byte(nil), s.cfg.IncompatibleProviderSpec...)
	req.LastKnownState = v.lastKnownState
	resp, err := s.createMachine(t, req)
	if codeOf(err) != codes.AlreadyExists {
		if err == nil {
			ruleCreateIncompatible.errorf(t, "the call answered OK (provider ID %q)", resp.GetProviderId())
		} else {
			ruleCreateIncompatible.errorf(t, "the call answered %s", describe(err))
		}
	}
	// The existing VM must be untouched: not deleted, not replaced.
	st, err := s.getMachineStatus(t, s.statusRequest(v.name, v.providerID))
	switch {
	case err != nil:
		ruleCreateIncompatible.errorf(t, "afterwards GetMachineStatus of the existing VM answered %s; the VM must be kept", describe(err))
	case st.GetProviderId() != v.providerID:
		ruleCreateIncompatible.errorf(t, "afterwards the machine has provider ID %q, before %q; the VM must be kept", st.GetProviderId(), v.providerID)
	}
	s.checkOneVM(t, ruleCreateIncompatible, v)
}

// testCreateLastKnownState sends the last_known_state the driver returned
// back with a repeated CreateMachine and with DeleteMachine (§6.1, §6.3).
func testCreateLastKnownState(s *suite, t T) {
	v := s.createVM(t, "state")
	if v.lastKnownState == "" {
		t.Skipf("the driver returned no last_known_state from CreateMachine; nothing to round-trip")
	}
	req := s.createRequest(v.name)
	req.LastKnownState = v.lastKnownState
	resp, err := s.createMachine(t, req)
	if err != nil {
		ruleLastKnownState.errorf(t, "a repeated CreateMachine carrying the last_known_state the driver returned answered %s, want OK", describe(err))
	} else {
		if resp.GetProviderId() != v.providerID {
			ruleLastKnownState.errorf(t, "a repeated CreateMachine carrying last_known_state returned provider ID %q, the first call %q", resp.GetProviderId(), v.providerID)
		}
		if resp.GetLastKnownState() == "" {
			ruleLastKnownState.errorf(t, "a repeated CreateMachine returned no last_known_state, the first call returned one; the state the core stores would be lost")
		}
		s.record(v, "", "", resp.GetLastKnownState())
	}
	del := s.deleteRequest(v)
	if _, err := s.deleteMachine(t, del); err != nil {
		ruleLastKnownState.errorf(t, "DeleteMachine carrying the last_known_state the driver returned answered %s, want OK", describe(err))
		return
	}
	s.markDeleted(v)
}
