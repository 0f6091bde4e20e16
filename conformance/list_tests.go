package conformance

import (
	"sort"
	"strings"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// testListContains creates a VM next to the shared one and checks that
// ListMachines lists both, once each with their provider IDs (§6.5.3). VMs
// outside the run's name prefix are never judged: the backend need not be
// exclusive to the suite. A provider's listing may lag behind its
// creations: the check waits for the VMs up to the List timeout.
func testListContains(s *suite, t T) {
	shared := s.fixture(t)
	v := s.createVM(t, "listed")
	listing, err := s.listOwnUntil(t, func(l map[string][]string) bool { return listed(l, shared) && listed(l, v) })
	if err != nil {
		ruleListContains.fatalf(t, "ListMachines answered %s, want OK", describe(err))
	}
	for _, want := range []*vm{shared, v} {
		ids := listing[want.name]
		switch {
		case len(ids) == 0:
			ruleListContains.errorf(t, "ListMachines does not list %s (provider ID %q)", want.name, want.providerID)
		case len(ids) > 1:
			ruleListContains.errorf(t, "ListMachines lists %s %d times (%v), want once", want.name, len(ids), ids)
		case ids[0] != want.providerID:
			ruleListContains.errorf(t, "ListMachines lists %s with provider ID %q, CreateMachine returned %q", want.name, ids[0], want.providerID)
		}
	}
}

// testListScope lists the shared VM's class under another class name and
// under another namespace: neither may list the suite's VMs, or the core's
// orphan collection would delete them (§6.5.3).
func testListScope(s *suite, t T) {
	shared := s.fixture(t)
	for _, other := range []struct {
		what   string
		change func(c *driverv1alpha1.MachineClass)
	}{
		{"class name", func(c *driverv1alpha1.MachineClass) { c.Name += "-other" + randomID(4) }},
		{"namespace", func(c *driverv1alpha1.MachineClass) { c.Namespace = "other-" + randomID(6) }},
	} {
		req := s.listRequest()
		other.change(req.MachineClass)
		resp, err := s.listMachines(t, req)
		if err != nil {
			ruleListScope.errorf(t, "ListMachines with another %s (%s/%s) answered %s, want OK", other.what, req.MachineClass.GetNamespace(), req.MachineClass.GetName(), describe(err))
			continue
		}
		var leaked []string
		for _, m := range resp.GetMachines() {
			if strings.HasPrefix(m.GetMachineName(), s.prefix) {
				leaked = append(leaked, m.GetMachineName())
			}
		}
		sort.Strings(leaked)
		if len(leaked) > 0 {
			ruleListScope.errorf(t, "ListMachines for class %s/%s (another %s) lists %v, created for class %s/%s (e.g. %s)",
				req.MachineClass.GetNamespace(), req.MachineClass.GetName(), other.what, leaked, s.cfg.Namespace, s.cfg.MachineClass.Name, shared.name)
		}
	}
}

// testListInvalidArguments sends ListMachines without the REQUIRED fields
// that scope it (§4.1, §6.5.3).
func testListInvalidArguments(s *suite, t T) {
	for _, c := range []struct {
		name, field string
		drop        func(r *driverv1alpha1.ListMachinesRequest)
	}{
		{"machine_class_missing", "machine_class", func(r *driverv1alpha1.ListMachinesRequest) { r.MachineClass = nil }},
		{"machine_class.name_missing", "machine_class.name", func(r *driverv1alpha1.ListMachinesRequest) { r.MachineClass.Name = "" }},
		{"machine_class.namespace_missing", "machine_class.namespace", func(r *driverv1alpha1.ListMachinesRequest) { r.MachineClass.Namespace = "" }},
	} {
		t.Run(c.name, func(t T) {
			req := s.listRequest()
			c.drop(req)
			_, err := s.listMachines(t, req)
			expectInvalidArgument(t, "ListMachines with "+strings.ReplaceAll(c.name, "_", " "), err, c.field)
		})
	}
}
