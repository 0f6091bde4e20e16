package conformance

import (
	"errors"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

const machineService = "/machina.driver.v1alpha1.MachineService/"

// testDeadlines sends calls with a short deadline and checks that the driver
// answers by the deadline plus a grace period (§10); any status is fine,
// typically OK or DEADLINE_EXCEEDED. A CreateMachine cut short must then
// succeed when retried with the same name, without a second VM (§6.1).
func testDeadlines(s *suite, t T) {
	raw, err := newRawClient(s.cfg.Endpoint)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer raw.close()
	v := s.track(t, s.name("deadline"))

	// timed sends one call and reports whether the driver answered in time.
	timed := func(t T, rpc string, req proto.Message) bool {
		t.Helper()
		start := time.Now()
		code, msg, err := raw.call(machineService+rpc, req, s.cfg.ShortDeadline, s.cfg.ShortDeadline+s.cfg.DeadlineGrace)
		elapsed := time.Since(start)
		switch {
		case errors.Is(err, errNoAnswer):
			ruleDeadline.errorf(t, "%s sent with a %v deadline got no answer within %v", rpc, s.cfg.ShortDeadline, s.cfg.ShortDeadline+s.cfg.DeadlineGrace)
			return false
		case err != nil:
			ruleTransportStatus.errorf(t, "%s: %v", rpc, err)
			return false
		}
		s.checkCanary(t, rpc, status.New(code, msg))
		t.Logf("%s with a %v deadline answered %s after %v", rpc, s.cfg.ShortDeadline, codeName(code), elapsed.Round(time.Millisecond))
		return true
	}

	t.Run("CreateMachine", func(t T) {
		timed(t, "CreateMachine", s.createRequest(v.name))
		// Whatever happened, the core retries with the same name.
		var resp *driverv1alpha1.CreateMachineResponse
		err := retry(s.cfg.Timeouts.Create, func() error {
			var err error
			resp, err = s.createMachine(t, s.createRequest(v.name))
			return err
		})
		if err != nil {
			ruleCreateRetry.fatalf(t, "the retried CreateMachine of %s answered %s, want OK", v.name, describe(err))
		}
		s.checkCreateResponse(t, v.name, resp)
		s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
		s.checkOneVM(t, ruleCreateRetry, v)
	})
	t.Run("GetMachineStatus", func(t T) {
		timed(t, "GetMachineStatus", s.statusRequest(v.name, v.providerID))
	})
	t.Run("ListMachines", func(t T) {
		if !s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
			t.Skipf("the driver does not advertise TYPE_LIST_MACHINES")
		}
		timed(t, "ListMachines", s.listRequest())
	})
	t.Run("GetVolumeIDs", func(t T) {
		if !s.caps[driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS] {
			t.Skipf("the driver does not advertise TYPE_GET_VOLUME_IDS")
		}
		timed(t, "GetVolumeIDs", &driverv1alpha1.GetVolumeIDsRequest{Volumes: append(s.fixtureVolumes(), s.sampleVolumes()...)})
	})
	t.Run("DeleteMachine", func(t T) {
		timed(t, "DeleteMachine", s.deleteRequest(v))
		// The cleanup retries the delete until the VM is gone.
	})
}
