package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// timeoutError is returned by the suite's calls when the driver did not
// answer within the configured timeout. It is kept apart from a
// DEADLINE_EXCEEDED the driver sent itself so that the message says which
// limit was hit.
type timeoutError struct {
	rpc     string
	timeout time.Duration
}

func (e timeoutError) Error() string {
	return fmt.Sprintf("no answer within %v (%s, the configured timeout, §10)", e.timeout, e.rpc)
}

// rpcFunc is the shape of a generated client method.
type rpcFunc[Req, Resp proto.Message] func(context.Context, Req, ...grpc.CallOption) (Resp, error)

// call makes an RPC with the configured timeout and applies the checks
// every answer must pass, whatever the test expects: an error is a gRPC
// status (§7.1), and neither an error nor a response carries the canary
// secret (§8.3).
//
// UNAVAILABLE is retried, with a backoff, until the timeout is spent: a
// driver may answer it at any time (provider throttling, §7.2), and the
// core retries it too. Every other answer is final here; the tests that
// expect ABORTED (an operation still in flight) retry it themselves.
func call[Req, Resp proto.Message](s *suite, t T, rpc string, timeout time.Duration, f rpcFunc[Req, Resp], req Req) (Resp, error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	wait := 100 * time.Millisecond
	var unavailable *status.Status // the last UNAVAILABLE answer, if any
	for {
		resp, err := f(ctx, req)
		if err == nil {
			s.checkResponseCanary(t, rpc, resp)
			return resp, nil
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && status.Code(err) == codes.DeadlineExceeded {
			if unavailable != nil && !identityRPCs[rpc] {
				// The retry the deadline cut short does not make a
				// throttling driver a silent one: every answer it gave
				// was UNAVAILABLE (on a loaded machine the last retry
				// may start too close to the deadline to be answered).
				ruleThrottled.errorf(t, "%s answered UNAVAILABLE for the whole %v, on every retry (%q)", rpc, timeout, unavailable.Message())
				return resp, err
			}
			return resp, timeoutError{rpc: rpc, timeout: timeout}
		}
		st, ok := status.FromError(err)
		if !ok {
			ruleTransportStatus.errorf(t, "%s returned %v", rpc, err)
			return resp, err
		}
		s.checkCanary(t, rpc, st)
		if st.Code() == codes.Unimplemented && requiredRPCs[rpc] {
			ruleRequiredImpl.errorf(t, "%s answered %s", rpc, describe(err))
		}
		if st.Code() != codes.Unavailable {
			return resp, err
		}
		unavailable = st
		if time.Now().Add(wait).After(deadline) {
			if identityRPCs[rpc] {
				// The preflight waits for a driver that is still starting.
				return resp, err
			}
			// Throttling is transient (§7.2): a driver that answers
			// UNAVAILABLE for a whole timeout is not throttled now and then.
			ruleThrottled.errorf(t, "%s answered UNAVAILABLE for the whole %v, on every retry (%q)", rpc, timeout, st.Message())
			return resp, err
		}
		t.Logf("%s answered UNAVAILABLE (%q); retrying in %v", rpc, st.Message(), wait)
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// checkCanary fails t when the status message or any status detail carries
// the canary secret. It reports once per test, RPC and code: a driver that
// echoes its request does it on every call.
func (s *suite) checkCanary(t T, rpc string, st *status.Status) {
	t.Helper()
	where := ""
	if form := s.findCanary([]byte(st.Message())); form != "" {
		where = "message (" + form + ")"
	}
	for _, d := range st.Proto().GetDetails() {
		if form := s.findCanary(d.GetValue()); where == "" && form != "" {
			where = "detail " + d.GetTypeUrl() + " (" + form + ")"
		}
	}
	if where == "" {
		return
	}
	key := t.Name() + "\x00" + rpc + "\x00" + st.Code().String()
	s.mu.Lock()
	seen := s.echoReported[key]
	s.echoReported[key] = true
	s.mu.Unlock()
	if !seen {
		ruleNoSecretEcho.errorf(t, "the %s error %s %s contains the canary secret sent in secrets or user_data", rpc, where, codeName(st.Code()))
	}
}

// checkResponseCanary fails t when any field of a response carries the
// canary secret (last_known_state, provider_id, addresses...).
func (s *suite) checkResponseCanary(t T, rpc string, resp proto.Message) {
	t.Helper()
	if f := resp.ProtoReflect().Descriptor().Fields().ByName("last_known_state"); f != nil {
		state := resp.ProtoReflect().Get(f).String()
		if form := s.findCanary([]byte(state)); form != "" {
			ruleStateNoSecret.errorf(t, "the %s response's last_known_state contains the canary secret sent in secrets or user_data (%s)", rpc, form)
			return
		}
	}
	b, err := proto.Marshal(resp)
	if form := s.findCanary(b); err == nil && form != "" {
		ruleNoSecretEcho.errorf(t, "the %s response contains the canary secret sent in secrets or user_data (%s)", rpc, form)
	}
}

// requiredRPCs are the MachineService RPCs every driver implements (§3.5).
// The identity RPCs are REQUIRED too; the preflight reports them.
var identityRPCs = map[string]bool{"GetPluginInfo": true, "GetPluginCapabilities": true, "Probe": true}

var requiredRPCs = map[string]bool{"CreateMachine": true, "DeleteMachine": true, "GetMachineStatus": true}

// findCanary returns how b carries the canary secret: as is, or in one of
// the encodings a driver might print bytes in (base64, hex); "" when not.
func (s *suite) findCanary(b []byte) string {
	c := []byte(s.canary)
	forms := []struct{ name, text string }{
		{"as is", s.canary},
		{"hex", hex.EncodeToString(c)},
		{"upper-case hex", strings.ToUpper(hex.EncodeToString(c))},
	}
	// The canary may sit at any offset of a larger value a driver encodes
	// (a whole request, a map): base64 depends on the offset modulo 3, so
	// look for the part of each of the three encodings the neighbours
	// cannot change.
	for k := range 3 {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			e := enc.EncodeToString(append(make([]byte, k), c...))
			forms = append(forms, struct{ name, text string }{"base64", e[(8*k+5)/6+1 : len(e)-4]})
		}
	}
	for _, f := range forms {
		if bytes.Contains(b, []byte(f.text)) {
			return f.name
		}
	}
	return ""
}

// The calls below wrap the generated clients with the configured timeouts.

func (s *suite) getPluginInfo(t T) (*driverv1alpha1.GetPluginInfoResponse, error) {
	t.Helper()
	return call(s, t, "GetPluginInfo", s.cfg.Timeouts.Identity, s.identity.GetPluginInfo, &driverv1alpha1.GetPluginInfoRequest{})
}

func (s *suite) getPluginCapabilities(t T) (*driverv1alpha1.GetPluginCapabilitiesResponse, error) {
	t.Helper()
	return call(s, t, "GetPluginCapabilities", s.cfg.Timeouts.Identity, s.identity.GetPluginCapabilities, &driverv1alpha1.GetPluginCapabilitiesRequest{})
}

func (s *suite) probe(t T) (*driverv1alpha1.ProbeResponse, error) {
	t.Helper()
	return call(s, t, "Probe", s.cfg.Timeouts.Identity, s.identity.Probe, &driverv1alpha1.ProbeRequest{})
}

func (s *suite) createMachine(t T, req *driverv1alpha1.CreateMachineRequest) (*driverv1alpha1.CreateMachineResponse, error) {
	t.Helper()
	return call(s, t, "CreateMachine", s.cfg.Timeouts.Create, s.machines.CreateMachine, req)
}

func (s *suite) initializeMachine(t T, req *driverv1alpha1.InitializeMachineRequest) (*driverv1alpha1.InitializeMachineResponse, error) {
	t.Helper()
	return call(s, t, "InitializeMachine", s.cfg.Timeouts.Initialize, s.machines.InitializeMachine, req)
}

func (s *suite) deleteMachine(t T, req *driverv1alpha1.DeleteMachineRequest) (*driverv1alpha1.DeleteMachineResponse, error) {
	t.Helper()
	return call(s, t, "DeleteMachine", s.cfg.Timeouts.Delete, s.machines.DeleteMachine, req)
}

func (s *suite) getMachineStatus(t T, req *driverv1alpha1.GetMachineStatusRequest) (*driverv1alpha1.GetMachineStatusResponse, error) {
	t.Helper()
	return call(s, t, "GetMachineStatus", s.cfg.Timeouts.Status, s.machines.GetMachineStatus, req)
}

func (s *suite) listMachines(t T, req *driverv1alpha1.ListMachinesRequest) (*driverv1alpha1.ListMachinesResponse, error) {
	t.Helper()
	return call(s, t, "ListMachines", s.cfg.Timeouts.List, s.machines.ListMachines, req)
}

func (s *suite) getVolumeIDs(t T, req *driverv1alpha1.GetVolumeIDsRequest) (*driverv1alpha1.GetVolumeIDsResponse, error) {
	t.Helper()
	return call(s, t, "GetVolumeIDs", s.cfg.Timeouts.VolumeIDs, s.machines.GetVolumeIDs, req)
}
