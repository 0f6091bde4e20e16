package conformance

import (
	"encoding/json"
	"fmt"
	"sync"

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
	s.initializeFirst(t, v)
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
	s.checkFoundAfterUpdate(t, v, s.cfg.UpdatedProviderSpec)
	s.sameVMAfter(t, ruleUpdateMatches, v, s.cfg.UpdatedProviderSpec, "after UpdateMachine answered applied")
}

// checkFoundAfterUpdate checks that an updated VM is still found the ways
// the core finds it (§6.7.3): GetMachineStatus with its provider ID and by
// name alone, with the new class, and ListMachines with its provider ID.
func (s *suite) checkFoundAfterUpdate(t T, v *vm, spec json.RawMessage) {
	t.Helper()
	for _, id := range []string{v.providerID, ""} {
		req := s.statusRequest(v.name, id)
		req.MachineClass = s.classWith(spec)
		how := "with its provider ID"
		if id == "" {
			how = "by name alone"
		}
		st, err := s.getMachineStatus(t, req)
		switch {
		case err != nil:
			ruleUpdateFound.errorf(t, "GetMachineStatus of %s %s after UpdateMachine answered applied answered %s, want OK with %s", v.name, how, describe(err), v.providerID)
		case st.GetProviderId() != v.providerID:
			ruleUpdateFound.errorf(t, "GetMachineStatus of %s %s after UpdateMachine answered applied returned provider ID %q, want %q", v.name, how, st.GetProviderId(), v.providerID)
		case v.nodeName != "" && st.GetNodeName() != v.nodeName:
			ruleUpdateNoDisrupt.errorf(t, "GetMachineStatus of %s after UpdateMachine answered applied returned node name %q, CreateMachine returned %q", v.name, st.GetNodeName(), v.nodeName)
		case v.initialized && st.GetNeedsInitialization():
			ruleUpdateNoDisrupt.errorf(t, "GetMachineStatus of %s after UpdateMachine answered applied says needs_initialization=true, although InitializeMachine had completed for it", v.name)
		}
	}
	if !s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
		return
	}
	listing, err := s.listOwnUntil(t, func(l map[string][]string) bool { return listed(l, v) })
	switch {
	case err != nil:
		ruleUpdateFound.errorf(t, "ListMachines after UpdateMachine of %s answered %s", v.name, describe(err))
	case !listed(listing, v):
		ruleUpdateFound.errorf(t, "ListMachines after UpdateMachine of %s answered applied does not list it with provider ID %s (listed: %v)", v.name, v.providerID, listing[v.name])
	}
}

// initializeFirst initializes v when the driver advertises
// InitializeMachine, as the core does before a machine can be updated, so
// that an update that undoes the set-up shows (§6.7.3).
func (s *suite) initializeFirst(t T, v *vm) {
	t.Helper()
	if !s.caps[driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE] {
		return
	}
	m := s.machine(v.name)
	m.ProviderId = v.providerID
	_, err := s.initializeMachine(t, &driverv1alpha1.InitializeMachineRequest{Machine: m, MachineClass: s.class(), Secrets: s.secrets(), LastKnownState: v.lastKnownState})
	if err != nil {
		ruleInitialize.fatalf(t, "InitializeMachine of %s before the update answered %s, want OK", v.name, describe(err))
	}
	v.initialized = true
}

// combinedSpec is NeedsNewVMProviderSpec with the in-place change of
// UpdatedProviderSpec added: the top-level keys where the updated spec
// differs from the class's and the needs-new-VM spec does not. It returns
// nil when there is no such key (the two changes touch the same keys).
func (s *suite) combinedSpec() json.RawMessage {
	var class, updated, needs map[string]json.RawMessage
	if json.Unmarshal(s.cfg.MachineClass.ProviderSpec, &class) != nil ||
		json.Unmarshal(s.cfg.UpdatedProviderSpec, &updated) != nil ||
		json.Unmarshal(s.cfg.NeedsNewVMProviderSpec, &needs) != nil {
		return nil
	}
	added := false
	for k, u := range updated {
		c, inClass := class[k]
		n, inNeeds := needs[k]
		if inClass && string(c) == string(u) {
			continue // not part of the in-place change
		}
		if inNeeds != inClass || (inNeeds && string(n) != string(c)) {
			continue // the needs-new-VM change touches this key too
		}
		needs[k] = u
		added = true
	}
	if !added {
		return nil
	}
	b, err := json.Marshal(needs)
	if err != nil {
		return nil
	}
	return b
}

// testUpdateNoPartialChange asks for a change with one difference the VM
// can take in place and one it cannot: the answer is needs_new_vm and the
// VM keeps everything it had, also the part that could have been applied
// (§6.7.3).
func testUpdateNoPartialChange(s *suite, t T) {
	if len(s.cfg.UpdatedProviderSpec) == 0 {
		t.Skipf("no provider spec the driver applies in place configured (Config.UpdatedProviderSpec, --updated-provider-spec)")
	}
	spec := s.combinedSpec()
	if spec == nil {
		t.Skipf("the updated and the needs-new-VM provider specs change the same keys; no combination of both to send")
	}
	v := s.createVM(t, "update-partial")
	for i := 1; i <= 2; i++ {
		resp, err := s.updateMachine(t, s.updateRequest(v, spec))
		switch {
		case codeOf(err) == codes.InvalidArgument:
			t.Skipf("UpdateMachine with the needs-new-VM spec plus the in-place change answered %s: the driver does not take this combination", describe(err))
		case err != nil:
			ruleUpdateNotError.fatalf(t, "UpdateMachine #%d of %s to a spec with an in-place and a needs-new-VM difference answered %s, want OK with needs_new_vm", i, v.name, describe(err))
		case resp.GetNeedsNewVm() == nil:
			ruleUpdateNoPartial.fatalf(t, "UpdateMachine #%d of %s to a spec with an in-place and a needs-new-VM difference answered %s, want needs_new_vm (the needs-new-VM difference alone answers needs_new_vm)", i, v.name, resultOf(resp))
		}
		if n := len(resp.GetNeedsNewVm().GetReason()); n == 0 || n > maxNeedsNewVMReason {
			ruleUpdateReasonCap.errorf(t, "UpdateMachine #%d of %s answered needs_new_vm with a reason of %d bytes", i, v.name, n)
		}
	}
	// Nothing was applied: the VM still matches the old class, and not
	// the class with the in-place change alone.
	s.sameVMAfter(t, ruleUpdateNoPartial, v, s.cfg.MachineClass.ProviderSpec, "after UpdateMachine answered needs_new_vm for a change with a part it could apply")
}

// testUpdateDeletedVM updates a machine with the provider ID of its
// deleted VM while a new VM of the name exists: the driver answers
// NOT_FOUND and leaves the new VM alone; a driver that falls back on the
// name updates the wrong VM (§6.7.3).
func testUpdateDeletedVM(s *suite, t T) {
	v := s.createVM(t, "update-deleted")
	old := *v
	if _, err := s.deleteMachine(t, s.deleteRequest(v)); err != nil {
		ruleDeleteOK.fatalf(t, "DeleteMachine of %s answered %s, want OK", v.name, describe(err))
	}
	s.markDeleted(v)
	var resp *driverv1alpha1.CreateMachineResponse
	err := retry(s.cfg.Timeouts.Create, func() error {
		var err error
		resp, err = s.createMachine(t, s.createRequest(v.name))
		return err
	})
	if err != nil {
		ruleRecreate.fatalf(t, "CreateMachine of %s after its VM was deleted answered %s, want OK", v.name, describe(err))
	}
	s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
	if v.providerID == old.providerID {
		ruleProviderIDNew.fatalf(t, "the new VM of %s has the provider ID %s of the deleted one", v.name, old.providerID)
	}
	spec := s.cfg.NeedsNewVMProviderSpec
	if len(s.cfg.UpdatedProviderSpec) > 0 {
		spec = s.cfg.UpdatedProviderSpec
	}
	_, err = s.updateMachine(t, s.updateRequest(&old, spec))
	expectCode(t, ruleUpdateDeletedID, "UpdateMachine of "+v.name+" with the provider ID "+old.providerID+" of its deleted VM (the new VM is "+v.providerID+")", err, codes.NotFound)
	s.sameVMAfter(t, ruleUpdateDeletedID, v, s.cfg.MachineClass.ProviderSpec, "after UpdateMachine with the provider ID of the deleted VM")
}

// testUpdateInParallel updates Config.Concurrency (at least three)
// machines of the class at once, as the core does up to
// --class-update-max-concurrent: each answers as alone, never ABORTED,
// which is for calls of the same machine only (§7.2, §9).
func testUpdateInParallel(s *suite, t T) {
	spec, want := s.cfg.NeedsNewVMProviderSpec, "needs_new_vm"
	if len(s.cfg.UpdatedProviderSpec) > 0 {
		spec, want = s.cfg.UpdatedProviderSpec, "applied"
	}
	n := max(s.cfg.Concurrency, 3)
	vms := make([]*vm, n)
	for i := range vms {
		vms[i] = s.createVM(t, fmt.Sprintf("update-parallel-%d", i))
	}
	var wg sync.WaitGroup
	for _, v := range vms {
		wg.Go(func() {
			resp, err := s.updateMachine(t, s.updateRequest(v, spec))
			switch {
			case codeOf(err) == codes.Aborted:
				ruleUpdateParallel.errorf(t, "UpdateMachine of %s, one of %d machines of the class updated at once, answered %s: no other call for %s was in flight", v.name, n, describe(err), v.name)
			case err != nil:
				ruleUpdateParallel.errorf(t, "UpdateMachine of %s, one of %d machines of the class updated at once, answered %s, want OK with %s", v.name, n, describe(err), want)
			case want == "applied" && resp.GetApplied().GetProviderId() != v.providerID:
				ruleUpdateParallel.errorf(t, "UpdateMachine of %s, one of %d at once, answered %s, want applied with provider ID %s", v.name, n, resultOf(resp), v.providerID)
			case want == "needs_new_vm" && resp.GetNeedsNewVm() == nil:
				ruleUpdateParallel.errorf(t, "UpdateMachine of %s, one of %d at once, answered %s, want needs_new_vm", v.name, n, resultOf(resp))
			}
		})
	}
	wg.Wait()
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
			r := ruleUpdateReason
			if i > 1 {
				r = ruleUpdateReasonCap
			}
			r.errorf(t, "UpdateMachine #%d of %s answered needs_new_vm with a reason of %d bytes", i, v.name, n)
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
