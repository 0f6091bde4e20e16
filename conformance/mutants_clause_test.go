package conformance_test

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// hookFunc is a mutation written as a function around the correct driver:
// it sees every call (rpc is the method's name) and decides whether to
// call next, the driver with the other mutations, and what to answer.
// The clause mutants below are hooks: one family per sentence, one member
// per clause (an RPC, a field, an encoding, a limit, a moment of the run).
type hookFunc func(d *refDriver, ctx context.Context, rpc string, req any, next func() (any, error)) (any, error)

// hookState is what a stateful hook remembers, per driver.
type hookState struct {
	mu    sync.Mutex
	n     map[string]int
	inUse int
	seen  map[string]bool
}

func (h *hookState) count(key string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.n == nil {
		h.n = map[string]int{}
	}
	h.n[key]++
	return h.n[key]
}

// invalidField is a REQUIRED field an RPC's invalid_arguments check leaves
// out, and how to tell that a request lacks it.
type invalidField struct {
	rpc, field string
	missing    func(req any) bool
	ok         func() any // a well-formed OK answer of the RPC
}

func machineMissing(f func(m *driverv1alpha1.Machine) bool) func(req any) bool {
	return func(req any) bool {
		m := machineOf(req)
		return m == nil || f(m)
	}
}

type classReq interface {
	GetMachineClass() *driverv1alpha1.MachineClass
}

func classMissing(f func(c *driverv1alpha1.MachineClass) bool) func(req any) bool {
	return func(req any) bool {
		r, ok := req.(classReq)
		return ok && (r.GetMachineClass() == nil || f(r.GetMachineClass()))
	}
}

var (
	noMachine   = func(req any) bool { return machineOf(req) == nil }
	noName      = machineMissing(func(m *driverv1alpha1.Machine) bool { return m.GetName() == "" })
	noNamespace = machineMissing(func(m *driverv1alpha1.Machine) bool { return m.GetNamespace() == "" })
	noProvID    = machineMissing(func(m *driverv1alpha1.Machine) bool { return m.GetProviderId() == "" })
	noClass     = classMissing(func(*driverv1alpha1.MachineClass) bool { return false })
	noClassName = classMissing(func(c *driverv1alpha1.MachineClass) bool { return c.GetName() == "" })
	noClassNS   = classMissing(func(c *driverv1alpha1.MachineClass) bool { return c.GetNamespace() == "" })
	noOldClass  = func(req any) bool {
		r, ok := req.(*driverv1alpha1.UpdateMachineRequest)
		return ok && r.GetOldMachineClass() == nil
	}
)

func okCreate() any {
	return &driverv1alpha1.CreateMachineResponse{ProviderId: "reference:///accepted", NodeName: "accepted"}
}
func okStatus() any {
	return &driverv1alpha1.GetMachineStatusResponse{ProviderId: "reference:///accepted", NodeName: "accepted"}
}
func okInit() any {
	return &driverv1alpha1.InitializeMachineResponse{ProviderId: "reference:///accepted", NodeName: "accepted"}
}
func okUpdate() any {
	return &driverv1alpha1.UpdateMachineResponse{Result: &driverv1alpha1.UpdateMachineResponse_NeedsNewVm{NeedsNewVm: &driverv1alpha1.NeedsNewVM{Reason: "accepted"}}}
}
func okDelete() any { return &driverv1alpha1.DeleteMachineResponse{} }
func okList() any   { return &driverv1alpha1.ListMachinesResponse{} }

// invalidFields are the fields of the invalid_arguments checks, by RPC.
var invalidFields = []invalidField{
	{"CreateMachine", "machine", noMachine, okCreate},
	{"CreateMachine", "machine.name", noName, okCreate},
	{"CreateMachine", "machine.namespace", noNamespace, okCreate},
	{"CreateMachine", "machine_class", noClass, okCreate},
	{"CreateMachine", "machine_class.name", noClassName, okCreate},
	{"CreateMachine", "machine_class.namespace", noClassNS, okCreate},
	{"GetMachineStatus", "machine", noMachine, okStatus},
	{"GetMachineStatus", "machine.name", noName, okStatus},
	{"GetMachineStatus", "machine_class", noClass, okStatus},
	{"InitializeMachine", "machine", noMachine, okInit},
	{"InitializeMachine", "machine.name", noName, okInit},
	{"InitializeMachine", "machine.provider_id", noProvID, okInit},
	{"InitializeMachine", "machine_class", noClass, okInit},
	{"UpdateMachine", "machine", noMachine, okUpdate},
	{"UpdateMachine", "machine.provider_id", noProvID, okUpdate},
	{"UpdateMachine", "machine_class", noClass, okUpdate},
	{"UpdateMachine", "old_machine_class", noOldClass, okUpdate},
	{"DeleteMachine", "machine", noMachine, okDelete},
	{"DeleteMachine", "machine.name", noName, okDelete},
	{"DeleteMachine", "machine_class", noClass, okDelete},
	{"ListMachines", "machine_class", noClass, okList},
	{"ListMachines", "machine_class.name", noClassName, okList},
	{"ListMachines", "machine_class.namespace", noClassNS, okList},
}

// onRPC is a hook that answers with f for calls of rpc and passes the
// others through.
func onRPC(rpc string, f func(d *refDriver, ctx context.Context, req any, next func() (any, error)) (any, error)) hookFunc {
	return func(d *refDriver, ctx context.Context, r string, req any, next func() (any, error)) (any, error) {
		if r != rpc {
			return next()
		}
		return f(d, ctx, req, next)
	}
}

// secretsOf returns the secrets of a request, joined, as a careless driver
// would print them.
func secretsOf(req any) string {
	r, ok := req.(interface{ GetSecrets() map[string][]byte })
	if !ok {
		return ""
	}
	var parts []string
	for k, v := range r.GetSecrets() {
		parts = append(parts, k+"="+string(v))
	}
	return strings.Join(parts, ",")
}

// echoTargets are the checks that provoke an error of each RPC.
var echoTargets = map[string]string{
	"CreateMachine":     "CreateMachine/invalid_arguments",
	"GetMachineStatus":  "GetMachineStatus/unknown_machine",
	"InitializeMachine": "InitializeMachine/unknown_vm",
	"UpdateMachine":     "UpdateMachine/unknown_vm",
	"DeleteMachine":     "DeleteMachine/invalid_arguments",
	"ListMachines":      "ListMachines/invalid_arguments",
	"GetVolumeIDs":      "GetVolumeIDs/invalid_arguments",
}

// echoRPCs are the RPCs whose requests carry secrets.
var echoRPCs = []string{"CreateMachine", "GetMachineStatus", "InitializeMachine", "UpdateMachine", "DeleteMachine", "ListMachines"}

// lateAfter is how many calls of an identity RPC a "late in the run"
// mutant answers correctly: more than the identity checks at the start
// make, fewer than the samples of a whole run.
const lateAfter = 40

// clauseMutants are the mutants of the clause-level audit: for each
// checked sentence, one per clause and per subtle case.
func clauseMutants() []mutant {
	var out []mutant
	add := func(name, id, test, want string, h hookFunc) {
		out = append(out, mutant{name: name, id: id, m: mutation{hook: h}, test: test, want: want})
	}

	// §4.1: each REQUIRED field of each RPC, three ways to get it wrong.
	for _, f := range invalidFields {
		f := f
		test := f.rpc + "/invalid_arguments"
		id := "R-4.1-receives-request-required"
		add(f.rpc+" "+f.field+" missing answers INTERNAL", id+"#code", test, "answered INTERNAL", onRPC(f.rpc, func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			if f.missing(req) {
				return nil, status.Error(codes.Internal, "nil pointer dereference")
			}
			return next()
		}))
		add(f.rpc+" "+f.field+" missing not named", id+"#names-field", test, "does not name the field "+f.field, onRPC(f.rpc, func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			if f.missing(req) {
				return nil, status.Error(codes.InvalidArgument, "the request is incomplete")
			}
			return next()
		}))
		add(f.rpc+" "+f.field+" missing accepted", id+"#missing", test, "answered OK, want INVALID_ARGUMENT", onRPC(f.rpc, func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
			if f.missing(req) {
				return f.ok(), nil
			}
			return next()
		}))
	}

	// §8.3: the secrets in the errors of each RPC, in each encoding and
	// in a status detail.
	for _, rpc := range echoRPCs {
		for _, enc := range []struct {
			name string
			f    func(string) string
		}{
			{"as is", func(s string) string { return s }},
			{"base64", func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }},
			{"hex", func(s string) string { return hex.EncodeToString([]byte(s)) }},
			{"upper-case hex", func(s string) string { return strings.ToUpper(hex.EncodeToString([]byte(s))) }},
		} {
			add(rpc+" errors carry the secrets "+enc.name, "R-8.3-not-put-secret-values#errors", echoTargets[rpc], "the "+rpc+" error message ("+enc.name+")",
				onRPC(rpc, func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
					resp, err := next()
					if err != nil {
						st := status.Convert(err)
						return nil, status.Errorf(st.Code(), "%s (secrets: %s)", st.Message(), enc.f(secretsOf(req)))
					}
					return resp, err
				}))
		}
		add(rpc+" errors carry the secrets in a detail", "R-8.3-not-put-secret-values#errors", echoTargets[rpc], "the "+rpc+" error detail",
			onRPC(rpc, func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				resp, err := next()
				if err != nil {
					st, derr := status.Convert(err).WithDetails(wrapperspb.String(secretsOf(req)))
					if derr == nil {
						return nil, st.Err()
					}
				}
				return resp, err
			}))
	}

	// §10.2: each RPC the deadline check sends ignores its deadline.
	for _, rpc := range []string{"Probe", "GetMachineStatus", "ListMachines", "GetVolumeIDs", "DeleteMachine"} {
		out = append(out, mutant{name: rpc + " ignores a short deadline", id: "R-10.2-end-call-deadline-own",
			m: mutation{overHTTP: true, hook: onRPC(rpc, func(_ *refDriver, ctx context.Context, _ any, next func() (any, error)) (any, error) {
				if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 2*time.Second {
					time.Sleep(3 * time.Second) // a provider call that does not watch ctx
				}
				return next()
			})},
			test: "Deadlines/answered_by_deadline", want: rpc + " sent with a 300ms deadline got no answer"})
	}

	// §3.5: the REQUIRED RPCs, and each OPTIONAL one advertised or not.
	add("CreateMachine unimplemented", "R-3.5-required-implemented", "CreateMachine/success", "CreateMachine answered UNIMPLEMENTED",
		onRPC("CreateMachine", func(*refDriver, context.Context, any, func() (any, error)) (any, error) {
			return nil, status.Error(codes.Unimplemented, "CreateMachine is not supported")
		}))
	out = append(out, mutant{name: "DeleteMachine unimplemented", id: "R-3.5-required-implemented",
		m: mutation{leavesVMs: true, hook: onRPC("DeleteMachine", func(*refDriver, context.Context, any, func() (any, error)) (any, error) {
			return nil, status.Error(codes.Unimplemented, "DeleteMachine is not supported")
		})},
		test: "DeleteMachine/unknown_machine", want: "DeleteMachine answered UNIMPLEMENTED"})
	// §3.2: each RPC refuses a field of a later revision.
	for _, rpc := range []string{"Probe", "CreateMachine", "GetMachineStatus", "ListMachines", "InitializeMachine", "UpdateMachine", "DeleteMachine", "GetVolumeIDs", "GetPluginCapabilities"} {
		add(rpc+" rejects unknown fields", "R-3.2-ignore-unknown-fields", "Compatibility/unknown_fields", rpc,
			onRPC(rpc, func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				if hasUnknown(req.(proto.Message).ProtoReflect()) {
					return nil, status.Error(codes.InvalidArgument, "the request has unknown fields")
				}
				return next()
			}))
	}
	optional := []struct {
		rpc string
		c   driverv1alpha1.Capability_Type
		ok  func() any
	}{
		{"InitializeMachine", driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE, okInit},
		{"GetVolumeIDs", driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS, func() any { return &driverv1alpha1.GetVolumeIDsResponse{} }},
		{"UpdateMachine", driverv1alpha1.Capability_TYPE_UPDATE_MACHINE, okUpdate},
		{"ListMachines", driverv1alpha1.Capability_TYPE_LIST_MACHINES, okList},
	}
	for _, o := range optional {
		if o.rpc != "ListMachines" {
			add(o.rpc+" advertised but unimplemented", "R-3.5-advertised-implemented", "Capabilities/advertised_rpcs_implemented", o.rpc+" answered UNIMPLEMENTED",
				onRPC(o.rpc, func(*refDriver, context.Context, any, func() (any, error)) (any, error) {
					return nil, status.Error(codes.Unimplemented, o.rpc+" is not supported")
				}))
		}
		if o.rpc == "GetVolumeIDs" {
			continue // a mutant of its own in broken_test.go
		}
		var caps []driverv1alpha1.Capability_Type
		for _, c := range allCaps {
			if c != o.c {
				caps = append(caps, c)
			}
		}
		out = append(out, mutant{name: o.rpc + " served without its capability", id: "R-3.5-unadvertised-unimplemented", caps: caps,
			m: mutation{hook: onRPC(o.rpc, func(_ *refDriver, _ context.Context, req any, next func() (any, error)) (any, error) {
				return o.ok(), nil
			})},
			test: "Capabilities/unadvertised_rpcs_unimplemented", want: o.rpc + " (not advertised: " + o.c.String() + ") answered OK"})
	}
	out = append(out, updateMutants()...)
	out = append(out, lateMutants()...)
	out = append(out, limitMutants()...)
	out = append(out, orderMutants()...)
	out = append(out, clauseGapMutants()...)
	return out
}
