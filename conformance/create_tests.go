package conformance

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// Size limits of the Driver API on what a driver sends (§4.2).
const (
	maxNameLen         = 253
	maxProviderIDLen   = 2048
	maxLastKnownState  = 64 << 10
	maxPluginNameLen   = 63
	maxVersionLen      = 128
	maxManifestEntries = 16
	maxManifestLen     = 128
	maxVolumeIDLen     = 1024
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

// invalidCreate is one CreateMachine request with a missing or malformed
// REQUIRED field. Only what a driver MUST reject is here: the size limits
// of §4.2 and the name rules of §4.3 are the sender's duty, which a driver
// MAY but need not enforce.
type invalidCreate struct {
	name  string // subtest name
	field string // the field path the error message must name
	// mutate breaks a valid request.
	mutate func(req *driverv1alpha1.CreateMachineRequest)
}

var invalidCreates = []invalidCreate{
	{"machine_missing", "machine", func(r *driverv1alpha1.CreateMachineRequest) { r.Machine = nil }},
	{"machine.name_missing", "machine.name", func(r *driverv1alpha1.CreateMachineRequest) { r.Machine.Name = "" }},
	{"machine.namespace_missing", "machine.namespace", func(r *driverv1alpha1.CreateMachineRequest) { r.Machine.Namespace = "" }},
	{"machine_class_missing", "machine_class", func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass = nil }},
	{"machine_class.name_missing", "machine_class.name", func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.Name = "" }},
	{"machine_class.namespace_missing", "machine_class.namespace", func(r *driverv1alpha1.CreateMachineRequest) { r.MachineClass.Namespace = "" }},
	// A Machine uses a class of its own namespace; a VM created for a class
	// of another namespace would be listed where no Machine can claim it
	// (§4.9).
	{"machine_class.namespace_differs", "machine_class.namespace", func(r *driverv1alpha1.CreateMachineRequest) {
		r.MachineClass.Namespace = "other-" + randomID(6)
	}},
	{"machine_class.provider_spec_missing", "machine_class.provider_spec", func(r *driverv1alpha1.CreateMachineRequest) {
		r.MachineClass.ProviderSpec = nil
	}},
	{"machine_class.provider_spec_not_json", "machine_class.provider_spec", func(r *driverv1alpha1.CreateMachineRequest) {
		r.MachineClass.ProviderSpec = []byte("{not json")
	}},
	{"machine_class.provider_spec_an_array", "machine_class.provider_spec", func(r *driverv1alpha1.CreateMachineRequest) {
		r.MachineClass.ProviderSpec = []byte(`["a","b"]`)
	}},
	{"machine_class.provider_spec_a_number", "machine_class.provider_spec", func(r *driverv1alpha1.CreateMachineRequest) {
		r.MachineClass.ProviderSpec = []byte(`42`)
	}},
}

// testCreateInvalidArguments sends CreateMachine requests that each break
// one REQUIRED field (§4.1, §4.4), all carrying the canary in secrets and
// user_data. The machine name is valid, so that should the driver create a
// VM anyway, the cleanup deletes it.
func testCreateInvalidArguments(s *suite, t T) {
	name := s.name("invalid")
	s.track(t, name)
	for _, c := range invalidCreates {
		t.Run(c.name, func(t T) {
			if c.name == "machine_class.namespace_differs" {
				s.checkNamespaceMismatch(t, c)
				return
			}
			req := s.createRequest(name)
			req.UserData = []byte(s.canary)
			c.mutate(req)
			_, err := s.createMachine(t, req)
			expectInvalidArgument(t, "CreateMachine with "+strings.ReplaceAll(c.name, "_", " "), err, c.field)
		})
	}
}

// checkNamespaceMismatch sends a CreateMachine whose class is of another
// namespace than the Machine, under a name of its own: the driver answers
// INVALID_ARGUMENT naming machine_class.namespace and creates no VM, in
// either namespace (§4.9).
func (s *suite) checkNamespaceMismatch(t T, c invalidCreate) {
	t.Helper()
	name := s.name("invalid-namespace")
	s.track(t, name)
	req := s.createRequest(name)
	req.UserData = []byte(s.canary)
	c.mutate(req)
	_, err := s.createMachine(t, req)
	what := "CreateMachine with " + strings.ReplaceAll(c.name, "_", " ")
	if expectCode(t, ruleClassNamespace, what, err, codes.InvalidArgument) {
		if msg := status.Convert(err).Message(); !strings.Contains(msg, c.field) {
			ruleClassNamespace.errorf(t, "%s: the message %q does not name the field %s", what, msg, c.field)
		}
	}
	for _, ns := range []string{s.cfg.Namespace, req.GetMachineClass().GetNamespace()} {
		st := s.statusRequest(name, "")
		st.Machine.Namespace, st.MachineClass.Namespace = ns, ns
		if _, err := s.getMachineStatus(t, st); codeOf(err) != codes.NotFound {
			ruleClassNamespaceNoVM.errorf(t, "after %s, GetMachineStatus of %s in namespace %s answered %s, want NOT_FOUND: no VM may be created", what, name, ns, describe(err))
		}
	}
}

// expectInvalidArgument checks that err is INVALID_ARGUMENT and that its
// message names the field (§4.1, §4.10).
func expectInvalidArgument(t T, what string, err error, field string) {
	t.Helper()
	r := invalidArgumentRule(field)
	if !expectCode(t, r, what, err, codes.InvalidArgument) {
		return
	}
	if msg := status.Convert(err).Message(); !strings.Contains(msg, field) {
		r.errorf(t, "%s: the message %q does not name the field %s", what, msg, field)
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
	// The very same request again, byte for byte: compatible whatever the
	// driver compares (§6.1.3).
	same, err := s.createMachine(t, proto.Clone(req).(*driverv1alpha1.CreateMachineRequest))
	switch {
	case err != nil:
		ruleByteIdentical.errorf(t, "the same request for %s again, with a byte-identical provider_spec, answered %s, want OK with %s", v.name, describe(err), first.GetProviderId())
	case same.GetProviderId() != first.GetProviderId():
		ruleByteIdentical.errorf(t, "the same request for %s again returned provider ID %q, call #1 returned %q", v.name, same.GetProviderId(), first.GetProviderId())
	}
	last := first
	for i := 2; i <= s.cfg.IdempotentCount+1; i++ {
		again := proto.Clone(req).(*driverv1alpha1.CreateMachineRequest)
		// The core sends the stored last_known_state, except after a
		// create timed out before any answer: try both.
		if i%2 == 0 {
			again.LastKnownState = last.GetLastKnownState()
		}
		// What a driver must not compare (§6.1.3) changes between calls:
		// a Machine re-created with the same name has a new UID, the
		// bootstrap token in user_data is renewed, labels change.
		again.Machine.Uid = s.machine(v.name).GetUid()
		again.Machine.Annotations = map[string]string{"conformance.machina.io/attempt": fmt.Sprint(i)}
		again.UserData = append(append([]byte(nil), req.GetUserData()...), fmt.Sprintf("\n# attempt %d\n", i)...)
		resp, err := s.createMachine(t, again)
		if err != nil {
			ruleCreateIdempotent.errorf(t, "call #%d for the existing machine %s (with another uid, annotations and user_data; last_known_state %s) answered %s, want OK",
				i, v.name, map[bool]string{true: "sent", false: "empty"}[again.LastKnownState != ""], describe(err))
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
	listing, err := s.listOwnUntil(t, func(l map[string][]string) bool { return listed(l, v) })
	if err != nil {
		ruleListContains.errorf(t, "ListMachines answered %s", describe(err))
		return
	}
	ids := listing[v.name]
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
	// Nor changed: the VM still has the provider spec it was created with,
	// so a repeat with that spec (byte for byte) still answers OK with it.
	again := s.createRequest(v.name)
	again.LastKnownState = v.lastKnownState
	resp, err = s.createMachine(t, again)
	switch {
	case err != nil:
		ruleIncompatibleKept.errorf(t, "afterwards CreateMachine of %s with the provider_spec it was created with answered %s, want OK with %s: the incompatible call changed the VM", v.name, describe(err), v.providerID)
	case resp.GetProviderId() != v.providerID:
		ruleIncompatibleKept.errorf(t, "afterwards CreateMachine of %s with the provider_spec it was created with returned provider ID %q, want %q", v.name, resp.GetProviderId(), v.providerID)
	default:
		s.record(v, "", "", resp.GetLastKnownState())
	}
	s.checkOneVM(t, ruleCreateIncompatible, v)
}

// testCreateLastKnownState sends the last_known_state the driver returned
// back with a repeated CreateMachine and with DeleteMachine, and checks that
// the driver does not depend on it: a repeat without it finds the same VM
// (§4.7: it is lost when an answer is lost or a Machine is re-created).
func testCreateLastKnownState(s *suite, t T) {
	v := s.createVM(t, "state")
	if v.lastKnownState == "" {
		t.Skipf("the driver returned no last_known_state from CreateMachine; nothing to round-trip")
	}
	with := s.createRequest(v.name)
	with.LastKnownState = v.lastKnownState
	resp, err := s.createMachine(t, with)
	switch {
	case err != nil:
		ruleLastKnownState.errorf(t, "a repeated CreateMachine carrying the last_known_state the driver returned answered %s, want OK", describe(err))
	case resp.GetProviderId() != v.providerID:
		ruleLastKnownState.errorf(t, "a repeated CreateMachine carrying last_known_state returned provider ID %q, the first call %q", resp.GetProviderId(), v.providerID)
	default:
		s.record(v, "", "", resp.GetLastKnownState())
	}
	resp, err = s.createMachine(t, s.createRequest(v.name))
	switch {
	case err != nil:
		ruleLastKnownState.errorf(t, "a repeated CreateMachine without last_known_state answered %s, want OK", describe(err))
	case resp.GetProviderId() != v.providerID:
		ruleLastKnownState.errorf(t, "a repeated CreateMachine without last_known_state returned provider ID %q, with it %q: the driver depends on last_known_state to find the VM", resp.GetProviderId(), v.providerID)
	}
	if _, err := s.deleteMachine(t, s.deleteRequest(v)); err != nil {
		ruleLastKnownState.errorf(t, "DeleteMachine carrying the last_known_state the driver returned answered %s, want OK", describe(err))
		return
	}
	s.markDeleted(v)
}

// testCreateTimedOutRetried cuts a CreateMachine short with a deadline the
// driver cannot meet and retries it as the core does: with the same name
// until a final answer, ABORTED meaning "still in flight" (§6.1.3, §10.2,
// §10.3). It must end with one VM.
func testCreateTimedOutRetried(s *suite, t T) {
	v := s.track(t, s.name("timed-out"))
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShortDeadline)
	start := time.Now()
	first, err := s.machines.CreateMachine(ctx, s.createRequest(v.name))
	cancel()
	// This call bypasses s.createMachine (its timeout is the point), so
	// apply the checks every answer gets here.
	if st, ok := status.FromError(err); ok && err != nil {
		s.checkCanary(t, "CreateMachine", st)
	} else if err == nil {
		s.checkResponseCanary(t, "CreateMachine", first)
	}
	t.Logf("CreateMachine with a %v deadline answered %s after %v", s.cfg.ShortDeadline, describe(err), time.Since(start).Round(time.Millisecond))
	var resp *driverv1alpha1.CreateMachineResponse
	err = retry(s.cfg.Timeouts.Create, func() error {
		var err error
		resp, err = s.createMachine(t, s.createRequest(v.name))
		return err
	})
	if err != nil {
		ruleCreateRetry.fatalf(t, "the retried CreateMachine of %s answered %s, want OK", v.name, describe(err))
	}
	s.checkCreateResponse(t, v.name, resp)
	s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
	st, err := s.getMachineStatus(t, s.statusRequest(v.name, ""))
	switch {
	case err != nil:
		ruleCreateRetry.errorf(t, "GetMachineStatus of %s by name answered %s, want OK with provider ID %q", v.name, describe(err), v.providerID)
	case st.GetProviderId() != v.providerID:
		ruleCreateRetry.errorf(t, "GetMachineStatus of %s by name returned provider ID %q, the retried CreateMachine %q", v.name, st.GetProviderId(), v.providerID)
	}
	s.checkOneVM(t, ruleCreateRetry, v)
}
