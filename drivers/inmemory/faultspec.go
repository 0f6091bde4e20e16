package inmemory

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
)

// FaultsEnv is the environment variable the driver binary reads faults
// from, in the syntax of ParseFaults.
const FaultsEnv = "MACHINA_INMEMORY_FAULTS"

// AnyMethod is the method name of a fault that applies to every RPC without
// a fault of its own.
const AnyMethod = "*"

// ParseFaults parses faults written as
//
//	METHOD:KEY=VALUE[,KEY=VALUE...][;METHOD:...]
//
// METHOD is an RPC name (CreateMachine, InitializeMachine, DeleteMachine,
// GetMachineStatus, ListMachines, GetVolumeIDs, Probe) or "*". The keys are
// the fields of Fault:
//
//	code=UNAVAILABLE   gRPC code by name (any case, "_" optional) or number
//	message=TEXT       error message (no "," or ";")
//	rate=0.25          probability per call, 0..1
//	seed=7             seed of the generator for rate
//	every=3            every third call
//	count=2            fire twice, then clear
//	latency=1.5s       Go duration
//	after              (or after=true) fire after the RPC took effect
//
// For example "CreateMachine:code=RESOURCE_EXHAUSTED,count=2;GetMachineStatus:latency=2s".
// A method named twice keeps its last fault. Blank input gives no faults.
func ParseFaults(s string) (map[string]Fault, error) {
	faults := map[string]Fault{}
	for entry := range strings.SplitSeq(s, ";") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		method, fields, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("fault %q: want METHOD:KEY=VALUE, with a colon after the method", entry)
		}
		method = strings.TrimSpace(method)
		f, err := parseFaultFields(fields)
		if err != nil {
			return nil, fmt.Errorf("fault for %s: %w", method, err)
		}
		if err := checkFault(method, f); err != nil {
			return nil, err
		}
		faults[method] = f
	}
	return faults, nil
}

func parseFaultFields(s string) (Fault, error) {
	var f Fault
	for field := range strings.SplitSeq(s, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		key, value, hasValue := strings.Cut(field, "=")
		key, value = strings.ToLower(strings.TrimSpace(key)), strings.TrimSpace(value)
		if !hasValue && key != "after" {
			return f, fmt.Errorf("%q: want KEY=VALUE", field)
		}
		var err error
		switch key {
		case "code":
			f.Code, err = ParseCode(value)
		case "message":
			f.Message = value
		case "rate":
			f.Rate, err = strconv.ParseFloat(value, 64)
		case "seed":
			f.Seed, err = strconv.ParseUint(value, 10, 64)
		case "every":
			f.Every, err = strconv.Atoi(value)
		case "count":
			f.Count, err = strconv.Atoi(value)
		case "latency":
			f.Latency, err = time.ParseDuration(value)
		case "after":
			f.After = true
			if hasValue {
				f.After, err = strconv.ParseBool(value)
			}
		default:
			return f, fmt.Errorf("unknown key %q", key)
		}
		if err != nil {
			return f, fmt.Errorf("%s: %w", key, err)
		}
	}
	return f, nil
}

// codesByName maps normalised code names (lower case, no "_") to codes.
var codesByName = func() map[string]codes.Code {
	m := map[string]codes.Code{"cancelled": codes.Canceled}
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		m[strings.ToLower(c.String())] = c
	}
	return m
}()

// ParseCode parses a gRPC code name such as "UNAVAILABLE", "Unavailable" or
// "resource_exhausted", or a code number such as "14".
func ParseCode(s string) (codes.Code, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		if codes.Code(n) > codes.Unauthenticated {
			return 0, fmt.Errorf("%d is not a gRPC code", n)
		}
		return codes.Code(n), nil
	}
	c, ok := codesByName[strings.ToLower(strings.ReplaceAll(s, "_", ""))]
	if !ok {
		return 0, fmt.Errorf("%q is not a gRPC code name", s)
	}
	return c, nil
}
