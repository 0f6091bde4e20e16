package conformance

import (
	"sort"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// testNoVMLeftBehind runs last: it deletes every VM of the run that is
// still there, the shared one and any a test's cleanup missed, and, with
// ListMachines, every VM the driver still lists within the run's prefix
// (§6.3.3). ListMachines may list a VM the provider is terminating, so a
// listed VM is deleted again rather than judged; every DeleteMachine must
// answer OK.
func testNoVMLeftBehind(s *suite, t T) {
	s.mu.Lock()
	var left []*vm
	for _, v := range s.vms {
		if !v.deleted {
			left = append(left, v)
		}
	}
	s.mu.Unlock()
	sort.Slice(left, func(i, j int) bool { return left[i].name < left[j].name })
	for _, v := range left {
		if err := s.deleteWithRetry(t, v); err != nil {
			ruleCleanup.errorf(t, "DeleteMachine of %s answered %s", v.name, describe(err))
		}
	}
	if !s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
		t.Logf("without ListMachines the suite cannot look for VMs it does not know of")
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
		for _, id := range listed[name] {
			t.Logf("ListMachines still lists %s (%s), deleting it again", name, id)
			if err := s.deleteWithRetry(t, &vm{name: name, providerID: id}); err != nil {
				ruleCleanup.errorf(t, "DeleteMachine of the listed VM %s (%s) answered %s", name, id, describe(err))
			}
		}
	}
}
