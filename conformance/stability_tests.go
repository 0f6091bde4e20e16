package conformance

import (
	"maps"

	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// identitySample is one reading, taken before a check, of the answers that
// must not change for the life of the driver process (§2.7, §3.4).
type identitySample struct {
	before string // the check it was taken before
	info   *driverv1alpha1.GetPluginInfoResponse
	caps   map[driverv1alpha1.Capability_Type]bool
	err    error
}

// sampleIdentity reads GetPluginInfo and GetPluginCapabilities before the
// check before and keeps what they answered for
// Identity/stable_to_the_end: a driver whose identity drifts late in its
// life (after so many calls, after a while) shows there, not only in the
// identity checks at the start of the run.
func (s *suite) sampleIdentity(t T, before string) {
	t.Helper()
	smp := identitySample{before: before}
	smp.info, smp.err = s.getPluginInfo(t)
	if smp.err == nil {
		var caps *driverv1alpha1.GetPluginCapabilitiesResponse
		caps, smp.err = s.getPluginCapabilities(t)
		smp.caps = capSet(caps)
	}
	s.mu.Lock()
	s.samples = append(s.samples, smp)
	s.mu.Unlock()
}

// capSet is the set of capabilities of an answer.
func capSet(resp *driverv1alpha1.GetPluginCapabilitiesResponse) map[driverv1alpha1.Capability_Type]bool {
	out := map[driverv1alpha1.Capability_Type]bool{}
	for _, c := range resp.GetCapabilities() {
		out[c.GetType()] = true
	}
	return out
}

// testStableToTheEnd reads the identity, the capabilities and the shared
// VM once more at the end of the run and compares them, and every sample
// taken before a check, with the answers at the start (§2.7, §3.4, §4.8).
func testStableToTheEnd(s *suite, t T) {
	s.sampleIdentity(t, "the end of the run")
	s.mu.Lock()
	samples := append([]identitySample(nil), s.samples...)
	s.mu.Unlock()
	infoReported, capsReported := false, false
	for _, smp := range samples {
		switch {
		case smp.err != nil:
			ruleStableAtEnd.errorf(t, "GetPluginInfo or GetPluginCapabilities, read before %s, answered %s, want the answers of the start of the run", smp.before, describe(smp.err))
		case !infoReported && !proto.Equal(smp.info, s.info):
			// The first drift is enough; every later sample repeats it.
			infoReported = true
			ruleStableAtEnd.errorf(t, "GetPluginInfo, read before %s, answered %v; at the start of the run %v", smp.before, smp.info, s.info)
		case !capsReported && !maps.Equal(smp.caps, s.caps):
			capsReported = true
			ruleStableCapsEnd.errorf(t, "GetPluginCapabilities, read before %s, answered %v; at the start of the run %v", smp.before, capNames(smp.caps), capNames(s.caps))
		}
	}
	if s.fixtureVM == nil {
		return
	}
	v := s.fixtureVM
	st, err := s.getMachineStatus(t, s.statusRequest(v.name, ""))
	switch {
	case err != nil:
		ruleFixtureStable.errorf(t, "GetMachineStatus of the shared machine %s by name at the end of the run answered %s, want OK with %s", v.name, describe(err), v.providerID)
	case st.GetProviderId() != v.providerID:
		ruleFixtureIDStable.errorf(t, "GetMachineStatus of the shared machine %s at the end of the run returned provider ID %q, CreateMachine returned %q", v.name, st.GetProviderId(), v.providerID)
	case v.nodeName != "" && st.GetNodeName() != v.nodeName:
		ruleFixtureStable.errorf(t, "GetMachineStatus of the shared machine %s at the end of the run returned node name %q, CreateMachine returned %q", v.name, st.GetNodeName(), v.nodeName)
	}
}
