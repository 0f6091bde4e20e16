package conformance

import (
	"fmt"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// testEachKeyMissing leaves out one configured secret key at a time
// (§4.5). A driver that does not need the key creates the VM; one that
// needs it answers INVALID_ARGUMENT naming that key, never its value.
// Every key is tried on its own: a driver that checks only some of its keys
// fails on the others at the provider, with a code the core misreads.
func testEachKeyMissing(s *suite, t T) {
	keys := make([]string, 0, len(s.cfg.Secrets))
	for k := range s.cfg.Secrets {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		t.Skipf("the configuration has no secrets")
	}
	slices.Sort(keys)
	for i, k := range keys {
		v := s.track(t, s.name(fmt.Sprintf("without-key-%d", i)))
		req := s.createRequest(v.name)
		delete(req.Secrets, k)
		resp, err := s.createMachine(t, req)
		switch {
		case err == nil:
			s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
			t.Logf("CreateMachine without the secret key %q answered OK: the driver does not need it", k)
		case codeOf(err) != codes.InvalidArgument:
			ruleMissingKey.errorf(t, "CreateMachine without the secret key %q answered %s, want OK (the key is not needed) or INVALID_ARGUMENT naming it", k, describe(err))
		case !strings.Contains(status.Convert(err).Message(), k):
			ruleMissingKey.errorf(t, "CreateMachine without the secret key %q answered INVALID_ARGUMENT %q, which does not name the key", k, status.Convert(err).Message())
		}
	}
}
