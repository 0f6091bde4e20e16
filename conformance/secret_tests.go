package conformance

import "sort"

// testCanaryNotEchoed provokes errors while sending the canary secret in
// secrets and user_data, and in place of every configured secret value
// (§8). Every call of the suite checks its error for the canary (see call);
// this test makes sure there are errors to check, on the paths where a
// driver is most tempted to print its input: validation, lookups of
// unknown machines, conflicts and rejected credentials.
func testCanaryNotEchoed(s *suite, t T) {
	provoked := 0
	count := func(err error) {
		if err != nil {
			provoked++
		}
	}

	bad := s.createRequest("")
	bad.UserData = []byte(s.canary)
	_, err := s.createMachine(t, bad)
	count(err)

	notJSON := s.createRequest(s.name("never-created"))
	notJSON.UserData = []byte(s.canary)
	notJSON.MachineClass.ProviderSpec = []byte("{" + s.canary)
	_, err = s.createMachine(t, notJSON)
	count(err)

	_, err = s.getMachineStatus(t, s.statusRequest(s.name("never-created"), ""))
	count(err)

	del := s.deleteRequest(&vm{name: s.name("never-created")})
	del.MachineClass = nil
	_, err = s.deleteMachine(t, del)
	count(err)

	shared := s.fixture(t)
	conflict := s.createRequest(shared.name)
	conflict.MachineClass.ProviderSpec = append([]byte(nil), s.cfg.IncompatibleProviderSpec...)
	conflict.UserData = []byte(s.canary)
	_, err = s.createMachine(t, conflict)
	count(err)

	if len(s.cfg.Secrets) > 0 {
		// Credentials the provider rejects: a driver must not quote them.
		// Should the driver not use them, the create succeeds: the VM is
		// tracked and deleted with the real secrets.
		v := s.track(t, s.name("canary-creds"))
		req := s.createRequest(v.name)
		keys := make([]string, 0, len(s.cfg.Secrets))
		for k := range s.cfg.Secrets {
			req.Secrets[k] = []byte(s.canary)
			keys = append(keys, k)
		}
		sort.Strings(keys)
		resp, err := s.createMachine(t, req)
		count(err)
		if err == nil {
			s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
			t.Logf("CreateMachine with every secret value (%v) replaced by the canary answered OK", keys)
		}
	}
	t.Logf("%d calls answered an error; none carried the canary unless reported above", provoked)
	if provoked == 0 {
		ruleRequiredFields.errorf(t, "none of the invalid requests sent with the canary answered an error; the check had nothing to examine")
	}
}
