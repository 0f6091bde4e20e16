package conformance

import (
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// maxNeedsNewVMReason is the limit of NeedsNewVM.reason (§6.7.2).
const maxNeedsNewVMReason = 1024

func (s *suite) updateMachine(t T, req *driverv1alpha1.UpdateMachineRequest) (*driverv1alpha1.UpdateMachineResponse, error) {
	t.Helper()
	return call(s, t, "UpdateMachine", s.cfg.Timeouts.Initialize, s.machines.UpdateMachine, req)
}

// classWith is the configured class with another provider spec.
func (s *suite) classWith(spec json.RawMessage) *driverv1alpha1.MachineClass {
	c := s.class()
	c.ProviderSpec = append([]byte(nil), spec...)
	return c
}

// updateRequest asks to move v from the configured class to one with spec.
func (s *suite) updateRequest(v *vm, spec json.RawMessage) *driverv1alpha1.UpdateMachineRequest {
	m := s.machine(v.name)
	m.ProviderId = v.providerID
	return &driverv1alpha1.UpdateMachineRequest{
		Machine: m, OldMachineClass: s.class(), MachineClass: s.classWith(spec),
		Secrets: s.secrets(), LastKnownState: v.lastKnownState,
	}
}

// sameVMAfter creates v's machine again with spec and reports whether the
// driver answers OK with v's VM: the VM matches a class with spec.
func (s *suite) sameVMAfter(t T, r rule, v *vm, spec json.RawMessage, what string) {
	t.Helper()
	req := s.createRequest(v.name)
	req.MachineClass = s.classWith(spec)
	resp, err := s.createMachine(t, req)
	switch {
	case err != nil:
		r.errorf(t, "%s, CreateMachine of %s with that class answered %s, want OK with its VM %s", what, v.name, describe(err), v.providerID)
	case resp.GetProviderId() != v.providerID:
		r.errorf(t, "%s, CreateMachine of %s with that class returned provider ID %q, want its VM %s", what, v.name, resp.GetProviderId(), v.providerID)
	}
}

// testUpdateApplies updates a VM to UpdatedProviderSpec, repeatedly, and
// checks that it keeps the VM and that the VM then matches the new class
// (§6.7.2, §6.7.3).
func testUpdateApplies(s *suite, t T) {
	if len(s.cfg.UpdatedProviderSpec) == 0 {
		t.Skipf("no provider spec the driver applies in place configured (Config.UpdatedProviderSpec, --updated-provider-spec)")
	}
	v := s.createVM(t, "update-applied")
	for i := 1; i <= s.cfg.IdempotentCount; i++ {
		resp, err := s.updateMachine(t, s.updateRequest(v, s.cfg.UpdatedProviderSpec))
		r := ruleUpdateOneResult
		if i > 1 {
			r = ruleUpdateIdempotent // the VM matches the class by now
		}
		if err != nil {
			r.fatalf(t, "UpdateMachine #%d of %s to the updated provider spec answered %s, want OK with applied", i, v.name, describe(err))
		}
		applied := resp.GetApplied()
		if applied == nil {
			r.fatalf(t, "UpdateMachine #%d of %s to the updated provider spec answered %s, want applied", i, v.name, resultOf(resp))
		}
		if applied.GetProviderId() != v.providerID {
			ruleUpdateProviderID.errorf(t, "UpdateMachine #%d of %s answered applied with provider ID %q, the VM has %q", i, v.name, applied.GetProviderId(), v.providerID)
		}
		if v.nodeName != "" && applied.GetNodeName() != v.nodeName {
			ruleUpdateKeepsVM.errorf(t, "UpdateMachine #%d of %s answered applied with node name %q, CreateMachine returned %q", i, v.name, applied.GetNodeName(), v.nodeName)
		}
		s.record(v, "", "", resp.GetLastKnownState())
	}
	st, err := s.getMachineStatus(t, s.statusRequest(v.name, v.providerID))
	if expectOK(t, ruleUpdateMatches, "GetMachineStatus of "+v.name+" after UpdateMachine", err) && st.GetProviderId() != v.providerID {
		ruleUpdateMatches.errorf(t, "GetMachineStatus of %s after UpdateMachine returned provider ID %q, want %q", v.name, st.GetProviderId(), v.providerID)
	}
	s.sameVMAfter(t, ruleUpdateMatches, v, s.cfg.UpdatedProviderSpec, "after UpdateMachine answered applied")
}

// testUpdateNeedsNewVM asks for a change the VM cannot take, repeatedly,
// and checks the answer and that the VM is unchanged (§6.7.2, §6.7.3).
func testUpdateNeedsNewVM(s *suite, t T) {
	v := s.createVM(t, "update-refused")
	for i := 1; i <= s.cfg.IdempotentCount; i++ {
		resp, err := s.updateMachine(t, s.updateRequest(v, s.cfg.NeedsNewVMProviderSpec))
		if err != nil {
			ruleUpdateNotError.fatalf(t, "UpdateMachine #%d of %s to a provider spec that needs a new VM answered %s, want OK with needs_new_vm", i, v.name, describe(err))
		}
		refused := resp.GetNeedsNewVm()
		if refused == nil {
			r := ruleUpdateOneResult
			if resp.GetApplied() != nil {
				r = ruleUpdateNotError
			}
			r.fatalf(t, "UpdateMachine #%d of %s to a provider spec that needs a new VM answered %s, want needs_new_vm (Config.NeedsNewVMProviderSpec, --needs-new-vm-provider-spec, must differ in a field the driver cannot change on a running VM)", i, v.name, resultOf(resp))
		}
		if n := len(refused.GetReason()); n == 0 || n > maxNeedsNewVMReason {
			ruleUpdateReason.errorf(t, "UpdateMachine #%d of %s answered needs_new_vm with a reason of %d bytes", i, v.name, n)
		}
		if i == 1 {
			// Before the repeats: a VM changed by the first call would
			// make them answer otherwise.
			s.sameVMAfter(t, ruleUpdateUntouched, v, s.cfg.MachineClass.ProviderSpec, "after UpdateMachine answered needs_new_vm")
		}
	}
}

// testUpdateUnknown updates VMs that do not exist: for a machine that never
// existed, and for the shared machine with a provider ID its VM does not
// have, which the driver must not update instead (§6.7.3).
func testUpdateUnknown(s *suite, t T) {
	v := &vm{name: s.name("never-created"), providerID: "conformance:///" + randomID(12)}
	_, err := s.updateMachine(t, s.updateRequest(v, s.cfg.MachineClass.ProviderSpec))
	expectCode(t, ruleUpdateOtherID, "UpdateMachine of the unknown machine "+v.name, err, codes.NotFound)
	shared := s.fixture(t)
	other := &vm{name: shared.name, providerID: "conformance:///" + randomID(12)}
	_, err = s.updateMachine(t, s.updateRequest(other, s.cfg.NeedsNewVMProviderSpec))
	expectCode(t, ruleUpdateOtherID, "UpdateMachine of "+shared.name+" with provider_id "+other.providerID+" (its VM has "+shared.providerID+")", err, codes.NotFound)
	// The shared VM was not changed in its stead.
	s.sameVMAfter(t, ruleUpdateOtherID, shared, s.cfg.MachineClass.ProviderSpec, "after UpdateMachine with another provider ID")
}

// testUpdateInvalidArguments sends UpdateMachine requests with a missing
// REQUIRED field (§4.1).
func testUpdateInvalidArguments(s *suite, t T) {
	cases := []struct {
		name, field string
		drop        func(*driverv1alpha1.UpdateMachineRequest)
	}{
		{"machine_missing", "machine", func(r *driverv1alpha1.UpdateMachineRequest) { r.Machine = nil }},
		{"machine.provider_id_missing", "machine.provider_id", func(r *driverv1alpha1.UpdateMachineRequest) { r.Machine.ProviderId = "" }},
		{"machine_class_missing", "machine_class", func(r *driverv1alpha1.UpdateMachineRequest) { r.MachineClass = nil }},
		{"old_machine_class_missing", "old_machine_class", func(r *driverv1alpha1.UpdateMachineRequest) { r.OldMachineClass = nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t T) {
			req := s.updateRequest(&vm{name: s.name("invalid"), providerID: "conformance:///" + randomID(12)}, s.cfg.MachineClass.ProviderSpec)
			c.drop(req)
			_, err := s.updateMachine(t, req)
			expectInvalidArgument(t, "UpdateMachine with "+c.name, err, c.field)
		})
	}
}

// resultOf names what an UpdateMachine answer carries, for messages.
func resultOf(resp *driverv1alpha1.UpdateMachineResponse) string {
	switch {
	case resp.GetApplied() != nil:
		return fmt.Sprintf("applied (provider ID %q)", resp.GetApplied().GetProviderId())
	case resp.GetNeedsNewVm() != nil:
		return fmt.Sprintf("needs_new_vm (%q)", resp.GetNeedsNewVm().GetReason())
	}
	return "OK with neither applied nor needs_new_vm"
}
