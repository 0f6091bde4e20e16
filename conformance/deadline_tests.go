package conformance

import (
	"errors"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// The method path prefixes of the two services (§2.4).
const (
	identityService = "/machina.driver.v1alpha1.IdentityService/"
	machineService  = "/machina.driver.v1alpha1.MachineService/"
)

// testDeadlines sends calls with a short deadline (Config.ShortDeadline) and
// checks that the driver answers by the deadline plus a grace period (§10.2);
// any status is fine, typically OK or DEADLINE_EXCEEDED. The calls go over
// plain HTTP/2 (see rawClient), so that the suite sees the driver's own
// answer, not its gRPC client giving up.
func testDeadlines(s *suite, t T) {
	raw, err := newRawClient(s.cfg.Endpoint)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer raw.close()
	v := s.track(t, s.name("deadline"))
	wait := s.cfg.ShortDeadline + s.cfg.DeadlineGrace

	timed := func(t T, service, rpc string, req proto.Message) {
		t.Helper()
		start := time.Now()
		code, msg, err := raw.call(service+rpc, req, s.cfg.ShortDeadline, wait)
		elapsed := time.Since(start)
		switch {
		case errors.Is(err, errNoAnswer):
			ruleDeadline.errorf(t, "%s sent with a %v deadline got no answer within %v", rpc, s.cfg.ShortDeadline, wait)
			return
		case err != nil:
			ruleTransportStatus.errorf(t, "%s: %v", rpc, err)
			return
		}
		s.checkCanary(t, rpc, status.New(code, msg))
		t.Logf("%s with a %v deadline answered %s after %v", rpc, s.cfg.ShortDeadline, codeName(code), elapsed.Round(time.Millisecond))
	}

	t.Run("Probe", func(t T) {
		timed(t, identityService, "Probe", &driverv1alpha1.ProbeRequest{})
	})
	t.Run("CreateMachine", func(t T) {
		timed(t, machineService, "CreateMachine", s.createRequest(v.name))
	})
	t.Run("GetMachineStatus", func(t T) {
		timed(t, machineService, "GetMachineStatus", s.statusRequest(v.name, ""))
	})
	t.Run("ListMachines", func(t T) {
		if !s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
			t.Skipf("the driver does not advertise TYPE_LIST_MACHINES")
		}
		timed(t, machineService, "ListMachines", s.listRequest())
	})
	t.Run("GetVolumeIDs", func(t T) {
		if !s.caps[driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS] {
			t.Skipf("the driver does not advertise TYPE_GET_VOLUME_IDS")
		}
		timed(t, machineService, "GetVolumeIDs", &driverv1alpha1.GetVolumeIDsRequest{Volumes: append(s.fixtureVolumes(), s.sampleVolumes()...)})
	})
	t.Run("DeleteMachine", func(t T) {
		// Whatever the create did, the cleanup deletes the VM with retries.
		timed(t, machineService, "DeleteMachine", s.deleteRequest(&vm{name: v.name}))
	})
}
