package conformance

import (
	"fmt"

	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// testDeleteRemoves deletes a VM and checks it is gone for GetMachineStatus
// and ListMachines (§6.3).
func testDeleteRemoves(s *suite, t T) {
	v := s.createVM(t, "delete")
	if _, err := s.deleteMachine(t, s.deleteRequest(v)); err != nil {
		ruleDeleteOK.fatalf(t, "DeleteMachine of %s answered %s, want OK", v.name, describe(err))
	}
	s.markDeleted(v)
	s.checkGone(t, ruleDeleteRemoves, v)
}

// checkGone checks that v's VM is gone: GetMachineStatus by name and by
// provider ID answers NOT_FOUND and ListMachines does not list it.
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
	if !s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
		return
	}
	listed, err := s.listOwn(t)
	if err != nil {
		ruleListContains.errorf(t, "ListMachines answered %s", describe(err))
		return
	}
	if ids := listed[v.name]; len(ids) > 0 {
		r.errorf(t, "after DeleteMachine answered OK, ListMachines still lists %s (%v)", v.name, ids)
	}
}

// testDeleteIdempotent deletes a VM and then repeats the call (§6.3).
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
// last_known_state, as the core does when a create answered nothing (§6.3).
func testDeleteByName(s *suite, t T) {
	v := s.createVM(t, "delete-by-name")
	byName := &vm{name: v.name}
	if _, err := s.deleteMachine(t, s.deleteRequest(byName)); err != nil {
		ruleDeleteByName.fatalf(t, "DeleteMachine of %s without provider_id answered %s, want OK", v.name, describe(err))
	}
	s.markDeleted(v)
	s.checkGone(t, ruleDeleteByName, v)
}

// testDeleteUnknown deletes machines that never existed (§6.3).
func testDeleteUnknown(s *suite, t T) {
	name := s.name("never-created")
	_, err := s.deleteMachine(t, s.deleteRequest(&vm{name: name}))
	expectOK(t, ruleDeleteUnknown, "DeleteMachine of "+name, err)
	_, err = s.deleteMachine(t, s.deleteRequest(&vm{name: name, providerID: "conformance:///" + randomID(12)}))
	expectOK(t, ruleDeleteUnknown, "DeleteMachine of "+name+" with a provider_id", err)
}

// testDeleteInvalidArguments sends DeleteMachine requests with a missing
// REQUIRED field (§4).
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
