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
// checks that the driver ends each by the deadline plus a grace period
// (§10.2). Any status is fine, typically OK or DEADLINE_EXCEEDED; so is an
// HTTP/2 stream reset once the deadline has passed, which is how grpc-go's
// server ends an expired call (racing the handler's own
// DEADLINE_EXCEEDED) and what a gRPC client reports as CANCELLED. A reset
// before the deadline cuts off a call that was still allowed to run, and
// fails. The calls go over plain HTTP/2 (see rawClient), so that the suite
// sees the driver's own answer, not its gRPC client giving up.
func testDeadlines(s *suite, t T) {
	raw, err := newRawClient(s.cfg.Endpoint)
	if err != nil {
		ruleDeadline.fatalf(t, "cannot send plain HTTP/2 calls to %s: %v", s.cfg.Endpoint, err)
	}
	defer raw.close()
	v := s.track(t, s.name("deadline"))
	deadline := s.cfg.ShortDeadline
	wait := deadline + s.cfg.DeadlineGrace

	timed := func(t T, service, rpc string, req proto.Message) {
		t.Helper()
		ans, err := raw.call(service+rpc, req, deadline, wait)
		switch {
		case errors.Is(err, errNoAnswer):
			ruleDeadline.errorf(t, "%s sent with a %v deadline got no answer within %v", rpc, deadline, wait)
		case err != nil:
			ruleTransportStatus.errorf(t, "%s: %v", rpc, err)
		case ans.reset && ans.elapsed < deadline:
			ruleTransportStatus.errorf(t, "%s sent with a %v deadline: the stream was reset (RST_STREAM %v) after %v, before the deadline; a call ends with a gRPC status, or with a reset only once its deadline has passed (§10.2)",
				rpc, deadline, ans.resetCode, ans.elapsed.Round(time.Millisecond))
		case ans.reset:
			t.Logf("%s with a %v deadline: the stream was reset (RST_STREAM %v) after %v, once the deadline had passed: the deadline is honoured", rpc, deadline, ans.resetCode, ans.elapsed.Round(time.Millisecond))
		default:
			s.checkCanary(t, rpc, status.New(ans.code, ans.message))
			t.Logf("%s with a %v deadline answered %s after %v", rpc, deadline, codeName(ans.code), ans.elapsed.Round(time.Millisecond))
		}
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
