package inmemory

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// FuzzParseFaults parses any fault specification (the driver's environment
// variable and its control RPC take the same text): no panic, and every
// fault it accepts can be injected: a known method, a gRPC code, a rate
// that is a probability (not NaN, not infinite), nothing negative.
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{
		"CreateMachine:code=RESOURCE_EXHAUSTED,count=2;GetMachineStatus:latency=2s",
		" CreateMachine:code=unavailable,rate=0.25,seed=9 ; *:latency=1ms,after",
		"CreateMachine:rate=NaN", "CreateMachine:rate=-Inf", "CreateMachine:rate=0x1p-2", "CreateMachine:rate=1e-400",
		"DeleteMachine:every=-1", "Probe:latency=-1s", "CreateMachine:code=17", "CreateMachine:after=perhaps",
		"ListMachines:count=99999999999999999999", "CreateMachine:message=a:b", ";;;", "CreateMachine:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		faults, err := ParseFaults(s)
		if err != nil {
			return
		}
		for method, fault := range faults {
			if err := checkFault(method, fault); err != nil {
				t.Fatalf("accepted a fault that cannot be injected: %s %+v: %v", method, fault, err)
			}
			if math.IsNaN(fault.Rate) || fault.Rate < 0 || fault.Rate > 1 {
				t.Fatalf("rate %v accepted from %q", fault.Rate, s)
			}
			if fault.Every < 0 || fault.Count < 0 || fault.Latency < 0 || fault.Code > codes.Unauthenticated {
				t.Fatalf("out of range fault accepted from %q: %+v", s, fault)
			}
		}
	})
}

// FuzzParseCapabilities parses the --disable-capability list: no panic, no
// duplicates, only known capabilities.
func FuzzParseCapabilities(f *testing.F) {
	for _, s := range []string{"initialize,list", " Volumes , list,,", "list,list", "everything"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		caps, err := ParseCapabilities(s)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, c := range caps {
			if seen[c.String()] {
				t.Fatalf("duplicate %v from %q", c, s)
			}
			seen[c.String()] = true
		}
	})
}

// providerSpecCanary marks the fuzzer's '@' in a provider spec: a value that
// must never show in an error.
const providerSpecCanary = "CANARY-SPEC-VALUE-51c9"

// FuzzParseProviderSpec parses any provider spec as CreateMachine does: no
// panic, every error INVALID_ARGUMENT without a value of the spec in it.
func FuzzParseProviderSpec(f *testing.F) {
	for _, s := range []string{`{"capacity":{"cpu":"2"},"bootDelay":"30s"}`, `{"bootDelay":"@"}`, `{"bootDelay":"-1s"}`,
		`{"capacity":{"cpu":@}}`, `{"capacity":"@"}`, "\f{}", `{"x":"@"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = bytes.ReplaceAll(raw, []byte("@"), []byte(providerSpecCanary))
		_, err := parseProviderSpec(raw)
		if err == nil {
			return
		}
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("code %v: %v", status.Code(err), err)
		}
		if strings.Contains(err.Error(), providerSpecCanary) {
			t.Fatalf("the error quotes the provider spec: %v", err)
		}
	})
}
