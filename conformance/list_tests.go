package conformance

import (
	"sort"
)

// testListContains creates a VM next to the shared one and checks that
// ListMachines lists both, once each with their provider IDs, and nothing
// of the run's prefix that was deleted (§6.5). VMs outside the prefix are
// never judged: the backend need not be exclusive to the suite.
func testListContains(s *suite, t T) {
	shared := s.fixture(t)
	v := s.createVM(t, "listed")
	listed, err := s.listOwn(t)
	if err != nil {
		ruleListContains.fatalf(t, "ListMachines answered %s, want OK", describe(err))
	}
	for _, want := range []*vm{shared, v} {
		ids := listed[want.name]
		switch {
		case len(ids) == 0:
			ruleListContains.errorf(t, "ListMachines does not list %s (provider ID %q)", want.name, want.providerID)
		case len(ids) > 1:
			ruleListContains.errorf(t, "ListMachines lists %s %d times (%v), want once", want.name, len(ids), ids)
		case ids[0] != want.providerID:
			ruleListContains.errorf(t, "ListMachines lists %s with provider ID %q, CreateMachine returned %q", want.name, ids[0], want.providerID)
		}
	}
	// Anything else the driver lists within the prefix must be a VM the
	// suite still has; a deleted one means a DeleteMachine lied.
	s.mu.Lock()
	var stale []string
	for name := range listed {
		if tracked, ok := s.vms[name]; ok && tracked.deleted {
			stale = append(stale, name)
		}
	}
	s.mu.Unlock()
	sort.Strings(stale)
	for _, name := range stale {
		ruleDeleteRemoves.errorf(t, "ListMachines lists %s, whose DeleteMachine answered OK earlier", name)
	}
}

// testListInvalidArguments sends ListMachines without its REQUIRED class
// (§4).
func testListInvalidArguments(s *suite, t T) {
	req := s.listRequest()
	req.MachineClass = nil
	_, err := s.listMachines(t, req)
	expectInvalidArgument(t, "ListMachines without machine_class", err, "machine_class")
}
