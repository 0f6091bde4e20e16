package conformance

import (
	"sync"

	"google.golang.org/grpc/codes"
)

// testSameMachine sends CreateMachine for one machine from several callers
// at once, as a core that lost track of a call can (§9): each answers OK
// with the same VM, or ABORTED while another is in flight, and exactly one
// VM is left.
func testSameMachine(s *suite, t T) {
	n := max(s.cfg.Concurrency, 3)
	v := s.track(t, s.name("same-machine"))
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			resp, err := s.createMachine(t, s.createRequest(v.name))
			ids[i], errs[i] = resp.GetProviderId(), err
		})
	}
	wg.Wait()
	// v keeps no provider ID: its cleanup deletes by name, every VM the
	// calls may have made.
	id := ""
	for i, err := range errs {
		switch {
		case err == nil && id == "":
			id = ids[i]
		case err == nil:
		case codeOf(err) != codes.Aborted:
			ruleSameMachine.errorf(t, "CreateMachine #%d of %s, %d at once, answered %s, want OK or ABORTED", i+1, v.name, n, describe(err))
		}
	}
	for i := range ids {
		if errs[i] == nil && ids[i] != id {
			ruleOneCreation.errorf(t, "CreateMachine calls of %s made at once returned the provider IDs %q and %q", v.name, id, ids[i])
		}
	}
	if id == "" {
		// Every call answered ABORTED: the creation is the driver's to
		// finish; the next call joins it.
		err := retry(s.cfg.Timeouts.Create, func() error {
			resp, err := s.createMachine(t, s.createRequest(v.name))
			id = resp.GetProviderId()
			return err
		})
		if err != nil {
			ruleSameMachine.fatalf(t, "CreateMachine of %s after the calls at once answered %s, want OK", v.name, describe(err))
		}
	}
	st, err := s.getMachineStatus(t, s.statusRequest(v.name, ""))
	switch {
	case err != nil:
		ruleOneCreation.errorf(t, "GetMachineStatus of %s by name after the calls at once answered %s, want OK with one VM", v.name, describe(err))
	case st.GetProviderId() != id:
		ruleOneCreation.errorf(t, "GetMachineStatus of %s returned provider ID %q, CreateMachine returned %q", v.name, st.GetProviderId(), id)
	}
	s.checkOneVM(t, ruleOneCreation, &vm{name: v.name, providerID: id})
}
