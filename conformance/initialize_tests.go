package conformance

import (
	"fmt"

	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func (s *suite) initializeRequest(v *vm) *driverv1alpha1.InitializeMachineRequest {
	m := s.machine(v.name)
	m.ProviderId = v.providerID
	return &driverv1alpha1.InitializeMachineRequest{
		Machine: m, MachineClass: s.class(), Secrets: s.secrets(), LastKnownState: v.lastKnownState,
	}
}

// testInitialize initializes a new VM, repeats the call, and checks that the
// VM no longer needs initialization (§6.2.3).
func testInitialize(s *suite, t T) {
	v := s.createVM(t, "initialize")
	firstNode := ""
	for i := 1; i <= s.cfg.IdempotentCount; i++ {
		resp, err := s.initializeMachine(t, s.initializeRequest(v))
		if err != nil {
			r := ruleInitialize
			if i > 1 {
				r = ruleInitRepeat // the VM is initialized by now
			}
			r.fatalf(t, "InitializeMachine #%d of %s answered %s, want OK", i, v.name, describe(err))
		}
		if resp.GetProviderId() != v.providerID {
			ruleInitProviderID.errorf(t, "InitializeMachine #%d returned provider ID %q, CreateMachine returned %q", i, resp.GetProviderId(), v.providerID)
		}
		checkNodeName(t, ruleInitialize, fmt.Sprintf("InitializeMachine #%d", i), resp.GetNodeName())
		// A repeat finds the VM initialized: it answers the current
		// values, those the first call set up, and changes nothing.
		if i == 1 {
			firstNode = resp.GetNodeName()
		} else if resp.GetNodeName() != firstNode {
			ruleInitRepeatSame.errorf(t, "InitializeMachine #%d of %s returned node name %q, InitializeMachine #1 returned %q", i, v.name, resp.GetNodeName(), firstNode)
		}
		if n := len(resp.GetLastKnownState()); n > maxLastKnownState {
			ruleInitialize.errorf(t, "InitializeMachine #%d returned a last_known_state of %d bytes, more than 64 KiB", i, n)
		}
		s.record(v, "", "", resp.GetLastKnownState())
	}
	st, err := s.getMachineStatus(t, s.statusRequest(v.name, v.providerID))
	switch {
	case err != nil:
		ruleInitialize.errorf(t, "GetMachineStatus after InitializeMachine answered %s, want OK", describe(err))
	case st.GetNeedsInitialization():
		ruleInitialize.errorf(t, "GetMachineStatus after InitializeMachine answered OK still returns needs_initialization=true")
	}
}

// testInitializeUnknown initializes VMs that do not exist: for a machine
// that never existed, and for the shared machine with a provider ID its VM
// does not have, which the driver must not initialize instead (§6.2.3,
// §6.2.4).
func testInitializeUnknown(s *suite, t T) {
	v := &vm{name: s.name("never-created"), providerID: "conformance:///" + randomID(12)}
	_, err := s.initializeMachine(t, s.initializeRequest(v))
	expectCode(t, ruleInitNotFnd, "InitializeMachine of the unknown machine "+v.name, err, codes.NotFound)
	shared := s.fixture(t)
	other := &vm{name: shared.name, providerID: "conformance:///" + randomID(12)}
	_, err = s.initializeMachine(t, s.initializeRequest(other))
	expectCode(t, ruleInitOtherID, "InitializeMachine of "+shared.name+" with provider_id "+other.providerID+" (its VM has "+shared.providerID+")", err, codes.NotFound)
}

// testInitializeInvalidArguments sends InitializeMachine requests with a
// missing REQUIRED field (§4.1), including the provider ID it requires.
func testInitializeInvalidArguments(s *suite, t T) {
	cases := append([]machineCase{{
		"machine.provider_id_missing", "machine.provider_id",
		func(m **driverv1alpha1.Machine, _ **driverv1alpha1.MachineClass) { (*m).ProviderId = "" },
	}}, machineCases...)
	for _, c := range cases {
		t.Run(c.name, func(t T) {
			req := s.initializeRequest(&vm{name: s.name("invalid"), providerID: "conformance:///" + randomID(12)})
			c.drop(&req.Machine, &req.MachineClass)
			_, err := s.initializeMachine(t, req)
			expectInvalidArgument(t, "InitializeMachine with "+c.name, err, c.field)
		})
	}
}
