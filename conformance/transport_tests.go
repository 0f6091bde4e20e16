package conformance

import (
	"google.golang.org/grpc/codes"

	"os"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// maxSocketPath is the sun_path limit minus the terminating NUL (§2.2).
const maxSocketPath = 107

// testSocketPermissions checks the mode of the driver's Unix socket
// (§2.2). It needs to see the socket file: it skips for TCP endpoints and
// when the suite runs where the path does not exist (another container).
func testSocketPermissions(s *suite, t T) {
	network, path, _ := parseEndpoint(s.cfg.Endpoint)
	if network != "unix" {
		t.Skipf("the endpoint %s is not a Unix socket", s.cfg.Endpoint)
	}
	if len(path) > maxSocketPath {
		ruleSocketPath.errorf(t, "the socket path %s has %d bytes", path, len(path))
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Skipf("cannot stat the socket %s from here: %v", path, err)
	}
	if fi.Mode().Type() != os.ModeSocket {
		ruleSocketMode.errorf(t, "%s is not a socket (mode %v)", path, fi.Mode())
		return
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		ruleSocketMode.errorf(t, "the socket %s has mode %04o", path, perm)
	}
}

// testConnections creates a VM on the suite's connection and looks it up,
// deletes it and checks the deletion each on a fresh connection (§2.6): a
// driver serves several clients (core replicas, debugging tools) and must
// keep no per-connection state.
func testConnections(s *suite, t T) {
	v := s.createVM(t, "connections")
	second, err := newSuite(s.cfg)
	if err != nil {
		ruleConnections.fatalf(t, "a second connection to %s cannot be opened: %v", s.cfg.Endpoint, err)
	}
	defer func() { _ = second.conn.Close() }()
	// The second suite shares the run's identity: prefix and canary.
	second.runID, second.prefix, second.canary = s.runID, s.prefix, s.canary
	second.caps = s.caps

	resp, err := second.getMachineStatus(t, second.statusRequest(v.name, v.providerID))
	switch {
	case err != nil:
		ruleConnections.errorf(t, "GetMachineStatus of %s on a second connection answered %s, want OK", v.name, describe(err))
	case resp.GetProviderId() != v.providerID:
		ruleConnections.errorf(t, "GetMachineStatus of %s on a second connection returned provider ID %q, CreateMachine on the first %q", v.name, resp.GetProviderId(), v.providerID)
	}
	if _, err := second.deleteMachine(t, second.deleteRequest(v)); err != nil {
		ruleConnections.errorf(t, "DeleteMachine of %s on a second connection answered %s, want OK", v.name, describe(err))
		return
	}
	s.markDeleted(v)
	_, err = s.getMachineStatus(t, s.statusRequest(v.name, ""))
	if codeOf(err) != codes.NotFound {
		ruleConnections.errorf(t, "after DeleteMachine on a second connection answered OK, GetMachineStatus of %s on the first answered %s, want NOT_FOUND", v.name, describe(err))
	}
	if s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
		if _, err := second.listMachines(t, second.listRequest()); err != nil {
			ruleConnections.errorf(t, "ListMachines on a second connection answered %s, want OK", describe(err))
		}
	}
}
