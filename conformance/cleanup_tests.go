package conformance

import (
	"sort"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// testNoVMLeftBehind runs last: it deletes the shared VM and checks that the
// driver lists no VM of the run's prefix any more (§6.3, §6.5). A VM listed
// here was either never deleted by a test's cleanup or survived a
// DeleteMachine that answered OK.
func testNoVMLeftBehind(s *suite, t T) {
	s.mu.Lock()
	var left []*vm
	for _, v := range s.vms {
		if !v.deleted {
			left = append(left, v)
		}
	}
	s.mu.Unlock()
	for _, v := range left {
		if err := s.deleteWithRetry(t, v); err != nil {
			ruleCleanup.errorf(t, "DeleteMachine of %s answered %s", v.name, describe(err))
		}
	}
	if !s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
		t.Logf("without ListMachines the suite cannot look for VMs left behind")
		return
	}
	listed, err := s.listOwn(t)
	if err != nil {
		ruleListContains.fatalf(t, "ListMachines answered %s", describe(err))
	}
	names := make([]string, 0, len(listed))
	for name := range listed {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		ruleCleanup.errorf(t, "ListMachines still lists %s (%v) after every machine of the run was deleted", name, listed[name])
	}
}
