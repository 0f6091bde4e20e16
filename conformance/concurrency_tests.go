package conformance

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// testConcurrency creates, looks up and deletes Config.Concurrency distinct
// machines in parallel (§9). The core sends at most one call per machine at
// a time but calls for different machines at once; a driver must not answer
// ABORTED or mix up VMs then.
func testConcurrency(s *suite, t T) {
	n := s.cfg.Concurrency
	vms := make([]*vm, n)
	for i := range vms {
		vms[i] = s.track(t, s.name(fmt.Sprintf("parallel-%d", i)))
	}
	// parallel runs f for every machine at once and waits for all. f may
	// call t.Errorf (safe from any goroutine) but not t.Fatalf.
	parallel := func(f func(v *vm)) {
		var wg sync.WaitGroup
		for _, v := range vms {
			wg.Go(func() { f(v) })
		}
		wg.Wait()
	}

	parallel(func(v *vm) {
		resp, err := s.createMachine(t, s.createRequest(v.name))
		if codeOf(err) == codes.Aborted {
			ruleAbortedSame.errorf(t, "CreateMachine of %s, one of %d distinct machines in parallel, answered %s: no other call for %s was in flight", v.name, n, describe(err), v.name)
			return
		}
		if err != nil {
			ruleConcurrency.errorf(t, "CreateMachine of %s, one of %d in parallel, answered %s, want OK", v.name, n, describe(err))
			return
		}
		s.checkCreateResponse(t, v.name, resp)
		s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
	})
	if t.Failed() {
		return
	}
	owner := map[string]string{}
	for _, v := range vms {
		if other, dup := owner[v.providerID]; dup {
			ruleProviderIDUnique.errorf(t, "%s and %s, created in parallel, got the same provider ID %q", other, v.name, v.providerID)
		}
		owner[v.providerID] = v.name
	}
	parallel(func(v *vm) {
		resp, err := s.getMachineStatus(t, s.statusRequest(v.name, v.providerID))
		switch {
		case codeOf(err) == codes.Aborted:
			ruleAbortedSame.errorf(t, "GetMachineStatus of %s, one of %d distinct machines in parallel, answered %s: no other call for %s was in flight", v.name, n, describe(err), v.name)
		case err != nil:
			ruleConcurrency.errorf(t, "GetMachineStatus of %s, one of %d in parallel, answered %s, want OK", v.name, n, describe(err))
		case resp.GetProviderId() != v.providerID:
			ruleConcurrency.errorf(t, "GetMachineStatus of %s returned provider ID %q, CreateMachine returned %q", v.name, resp.GetProviderId(), v.providerID)
		}
	})
	if s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
		for _, v := range vms {
			s.checkOneVM(t, ruleConcurrency, v)
		}
	}
	parallel(func(v *vm) {
		_, err := s.deleteMachine(t, s.deleteRequest(v))
		if codeOf(err) == codes.Aborted {
			ruleAbortedSame.errorf(t, "DeleteMachine of %s, one of %d distinct machines in parallel, answered %s: no other call for %s was in flight", v.name, n, describe(err), v.name)
			return
		}
		if err != nil {
			ruleConcurrency.errorf(t, "DeleteMachine of %s, one of %d in parallel, answered %s, want OK", v.name, n, describe(err))
			return
		}
		s.markDeleted(v)
	})
	for _, v := range vms {
		_, err := s.getMachineStatus(t, s.statusRequest(v.name, ""))
		if codeOf(err) != codes.NotFound {
			ruleConcurrency.errorf(t, "after the parallel DeleteMachine calls answered OK, GetMachineStatus of %s answered %s, want NOT_FOUND", v.name, describe(err))
		}
	}
}
