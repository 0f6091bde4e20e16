package conformance

import (
	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// testStatusMatchesCreate looks the shared VM up by name and provider ID,
// and by name alone (§6.4).
func testStatusMatchesCreate(s *suite, t T) {
	v := s.fixture(t)
	for _, lookup := range []struct{ how, providerID string }{
		{"by name and provider_id", v.providerID},
		{"by name alone", ""},
	} {
		resp, err := s.getMachineStatus(t, s.statusRequest(v.name, lookup.providerID))
		if err != nil {
			ruleStatusMatches.errorf(t, "GetMachineStatus of %s %s answered %s, want OK", v.name, lookup.how, describe(err))
			continue
		}
		if resp.GetProviderId() != v.providerID {
			ruleStatusMatches.errorf(t, "GetMachineStatus %s returned provider ID %q, CreateMachine returned %q", lookup.how, resp.GetProviderId(), v.providerID)
		}
		if resp.GetNodeName() != v.nodeName {
			ruleNodeNameStable.errorf(t, "GetMachineStatus %s returned node name %q, CreateMachine returned %q", lookup.how, resp.GetNodeName(), v.nodeName)
		}
		if resp.GetNeedsInitialization() && !s.caps[driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE] {
			ruleNeedsInit.errorf(t, "GetMachineStatus %s returned needs_initialization=true, but the driver does not advertise TYPE_INITIALIZE_MACHINE", lookup.how)
		}
	}
}

// testStatusUnknown looks up machines that never existed (§6.4).
func testStatusUnknown(s *suite, t T) {
	name := s.name("never-created")
	_, err := s.getMachineStatus(t, s.statusRequest(name, ""))
	expectCode(t, ruleStatusUnknown, "GetMachineStatus of "+name, err, codes.NotFound)
	_, err = s.getMachineStatus(t, s.statusRequest(name, "conformance:///"+randomID(12)))
	expectCode(t, ruleStatusUnknown, "GetMachineStatus of "+name+" with a provider_id", err, codes.NotFound)
}

// testStatusProviderIDMismatch looks the shared VM up with a provider ID it
// does not have: the core must learn that the VM it recorded is gone (§6.4).
func testStatusProviderIDMismatch(s *suite, t T) {
	v := s.fixture(t)
	other := "conformance:///" + randomID(12)
	_, err := s.getMachineStatus(t, s.statusRequest(v.name, other))
	expectCode(t, ruleStatusProviderID, "GetMachineStatus of "+v.name+" with provider_id "+other+" (its VM has "+v.providerID+")", err, codes.NotFound)
}

// machineCase is one request of an RPC keyed by a machine, with a missing
// REQUIRED field, for the invalid-argument tables of several RPCs.
type machineCase struct {
	name  string
	field string
	// drop removes the field from the machine or class; it may replace
	// them with nil.
	drop func(m **driverv1alpha1.Machine, c **driverv1alpha1.MachineClass)
}

var machineCases = []machineCase{
	{"machine_missing", "machine", func(m **driverv1alpha1.Machine, _ **driverv1alpha1.MachineClass) { *m = nil }},
	{"machine.name_missing", "machine.name", func(m **driverv1alpha1.Machine, _ **driverv1alpha1.MachineClass) { (*m).Name = "" }},
	{"machine_class_missing", "machine_class", func(_ **driverv1alpha1.Machine, c **driverv1alpha1.MachineClass) { *c = nil }},
}

// testStatusInvalidArguments sends GetMachineStatus requests with a missing
// REQUIRED field (§4).
func testStatusInvalidArguments(s *suite, t T) {
	for _, c := range machineCases {
		t.Run(c.name, func(t T) {
			req := s.statusRequest(s.name("invalid"), "")
			c.drop(&req.Machine, &req.MachineClass)
			_, err := s.getMachineStatus(t, req)
			expectInvalidArgument(t, "GetMachineStatus with "+c.name, err, c.field)
		})
	}
}
