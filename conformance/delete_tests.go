package conformance

import (
	"fmt"

	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// testDeleteRemoves deletes a VM with the request the orphan collector
// sends (machine name, namespace and provider ID only, §11.7) and checks
// that GetMachineStatus no longer finds it (§6.3.3). ListMachines may still
// list a VM the provider is terminating, so it is not consulted.
func testDeleteRemoves(s *suite, t T) {
	v := s.createVM(t, "delete")
	req := s.deleteRequest(v)
	req.Machine = s.minimalMachine(v.name, v.providerID)
	if _, err := s.deleteMachine(t, req); err != nil {
		ruleDeleteOK.fatalf(t, "DeleteMachine of %s with only name, namespace and provider_id answered %s, want OK", v.name, describe(err))
	}
	s.markDeleted(v)
	s.checkGone(t, ruleDeleteRemoves, v)
}

// checkGone checks that GetMachineStatus, by name and by name and provider
// ID, answers NOT_FOUND for v.
func (s *suite) checkGone(t T, r rule, v *vm) {
	t.Helper()
	for _, lookup := range []struct{ how, providerID string }{
		{"by name", ""},
		{"by name and provider_id", v.providerID},
	} {
		resp, err := s.getMachineStatus(t, s.statusRequest(v.name, lookup.providerID))
		switch {
		case err == nil:
			r.errorf(t, "after DeleteMachine answered OK, GetMachineStatus of %s %s answered OK (provider ID %q), want NOT_FOUND", v.name, lookup.how, resp.GetProviderId())
		case codeOf(err) != codes.NotFound:
			r.errorf(t, "after DeleteMachine answered OK, GetMachineStatus of %s %s answered %s, want NOT_FOUND", v.name, lookup.how, describe(err))
		}
	}
}

// testDeleteIdempotent deletes a VM and then repeats the call (§6.3.3).
func testDeleteIdempotent(s *suite, t T) {
	v := s.createVM(t, "delete-again")
	if _, err := s.deleteMachine(t, s.deleteRequest(v)); err != nil {
		ruleDeleteOK.fatalf(t, "DeleteMachine of %s answered %s, want OK", v.name, describe(err))
	}
	s.markDeleted(v)
	for i := 2; i <= s.cfg.IdempotentCount+1; i++ {
		_, err := s.deleteMachine(t, s.deleteRequest(v))
		expectOK(t, ruleDeleteIdempotent, fmt.Sprintf("DeleteMachine #%d of the deleted machine %s", i, v.name), err)
	}
}

// testDeleteByName deletes a VM with an empty provider_id and no
// last_known_state, as the core does when a create never answered (§6.3.3).
func testDeleteByName(s *suite, t T) {
	v := s.createVM(t, "delete-by-name")
	if _, err := s.deleteMachine(t, s.deleteRequest(&vm{name: v.name})); err != nil {
		ruleDeleteByName.fatalf(t, "DeleteMachine of %s without provider_id answered %s, want OK", v.name, describe(err))
	}
	s.markDeleted(v)
	s.checkGone(t, ruleDeleteByName, v)
}

// testDeleteOtherProviderID deletes a machine name with a provider ID its
// VM does not have: the VM may belong to a newer Machine of the same name
// and must stay (§6.3.3).
func testDeleteOtherProviderID(s *suite, t T) {
	v := s.createVM(t, "delete-other-id")
	other := "conformance:///" + randomID(12)
	_, err := s.deleteMachine(t, s.deleteRequest(&vm{name: v.name, providerID: other}))
	if !expectOK(t, ruleDeleteOnlyID, "DeleteMachine of "+v.name+" with provider_id "+other+" (a VM that is gone)", err) {
		return
	}
	resp, err := s.getMachineStatus(t, s.statusRequest(v.name, v.providerID))
	switch {
	case err != nil:
		ruleDeleteOnlyID.errorf(t, "after DeleteMachine of %s with provider_id %s, GetMachineStatus of its VM %s answered %s, want OK: the driver deleted the wrong VM", v.name, other, v.providerID, describe(err))
	case resp.GetProviderId() != v.providerID:
		ruleDeleteOnlyID.errorf(t, "after DeleteMachine of %s with provider_id %s, its VM has provider ID %q, want %q", v.name, other, resp.GetProviderId(), v.providerID)
	}
}

// testRecreateAfterDelete creates a machine name again after its VM was
// deleted: a new VM with a new provider ID, never the deleted one (§6.3.3,
// §4.8: provider IDs are not reused).
func testRecreateAfterDelete(s *suite, t T) {
	v := s.createVM(t, "recreate")
	old := v.providerID
	if _, err := s.deleteMachine(t, s.deleteRequest(v)); err != nil {
		ruleDeleteOK.fatalf(t, "DeleteMachine of %s answered %s, want OK", v.name, describe(err))
	}
	s.markDeleted(v)
	// The provider may still be terminating the old VM: the core retries
	// ABORTED and the other transient codes, and so does the suite.
	var resp *driverv1alpha1.CreateMachineResponse
	err := retry(s.cfg.Timeouts.Create, func() error {
		var err error
		resp, err = s.createMachine(t, s.createRequest(v.name))
		return err
	})
	if err != nil {
		ruleRecreate.fatalf(t, "CreateMachine of %s after its VM %s was deleted answered %s, want OK", v.name, old, describe(err))
	}
	s.checkCreateResponse(t, v.name, resp)
	s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
	if resp.GetProviderId() == old {
		ruleRecreate.errorf(t, "CreateMachine of %s after DeleteMachine returned the deleted VM's provider ID %q", v.name, old)
		ruleProviderIDNew.errorf(t, "the new VM of %s has the provider ID %q of the VM deleted before", v.name, old)
		return
	}
	// The deleted VM counts for nothing now: the lookup by name finds
	// exactly the new VM, and its old provider ID finds none (§6.4.3).
	st, err := s.getMachineStatus(t, s.statusRequest(v.name, ""))
	switch {
	case err != nil:
		ruleLookupDeleted.errorf(t, "GetMachineStatus of %s by name after it was deleted and created again answered %s, want OK with the new VM %s", v.name, describe(err), resp.GetProviderId())
	case st.GetProviderId() != resp.GetProviderId():
		ruleLookupDeleted.errorf(t, "GetMachineStatus of %s by name after it was deleted and created again returned provider ID %q, want the new VM %q", v.name, st.GetProviderId(), resp.GetProviderId())
	}
	_, err = s.getMachineStatus(t, s.statusRequest(v.name, old))
	expectCode(t, ruleLookupDeleted, "GetMachineStatus of "+v.name+" with the deleted VM's provider_id "+old, err, codes.NotFound)
	// A DeleteMachine the core repeats for the old VM (its Machine's
	// finalizer ran late) must not take the new VM with it (§6.3.3).
	_, err = s.deleteMachine(t, s.deleteRequest(&vm{name: v.name, providerID: old}))
	if !expectOK(t, ruleDeleteOnlyID, "DeleteMachine of "+v.name+" with the deleted VM's provider_id "+old, err) {
		return
	}
	if st, err := s.getMachineStatus(t, s.statusRequest(v.name, v.providerID)); err != nil || st.GetProviderId() != v.providerID {
		ruleDeleteOnlyID.errorf(t, "after DeleteMachine of %s with the deleted VM's provider_id %s, GetMachineStatus of the new VM %s answered %s, want OK: the driver deleted the new VM", v.name, old, v.providerID, describe(err))
	}
}

// testDeleteOtherMachinesVM deletes with the provider ID of a VM recorded
// for another Machine: a driver that compares the name deletes nothing, one
// that does not deletes the VM; both answer OK (§6.3.3).
func testDeleteOtherMachinesVM(s *suite, t T) {
	v := s.createVM(t, "delete-recorded")
	other := s.name("delete-recorded-other")
	_, err := s.deleteMachine(t, s.deleteRequest(&vm{name: other, providerID: v.providerID}))
	expectOK(t, ruleDeleteRecorded, "DeleteMachine of "+other+" with the provider_id "+v.providerID+" of "+v.name+"'s VM", err)
}

// testDeleteUnknown deletes machines that never existed (§6.3.3).
func testDeleteUnknown(s *suite, t T) {
	name := s.name("never-created")
	_, err := s.deleteMachine(t, s.deleteRequest(&vm{name: name}))
	expectOK(t, ruleDeleteUnknown, "DeleteMachine of "+name, err)
	_, err = s.deleteMachine(t, s.deleteRequest(&vm{name: name, providerID: "conformance:///" + randomID(12)}))
	expectOK(t, ruleDeleteUnknown, "DeleteMachine of "+name+" with a provider_id", err)
}

// testDeleteInvalidArguments sends DeleteMachine requests with a missing
// REQUIRED field (§4.1).
func testDeleteInvalidArguments(s *suite, t T) {
	for _, c := range machineCases {
		t.Run(c.name, func(t T) {
			req := s.deleteRequest(&vm{name: s.name("invalid")})
			c.drop(&req.Machine, &req.MachineClass)
			_, err := s.deleteMachine(t, req)
			expectInvalidArgument(t, "DeleteMachine with "+c.name, err, c.field)
		})
	}
}
