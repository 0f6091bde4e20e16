package virtualnode

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// providerSpecCanary marks the fuzzer's '@' in a provider spec: a value that
// must never show in an error.
const providerSpecCanary = "CANARY-SPEC-VALUE-51c9"

// FuzzParseProviderSpec parses any provider spec as CreateMachine does: no
// panic, every error INVALID_ARGUMENT without a value of the spec in it,
// and two encodings of one accepted spec hash alike.
func FuzzParseProviderSpec(f *testing.F) {
	for _, s := range []string{`{"capacity":{"cpu":"2"},"bootDelay":"30s"}`, `{"bootDelay":"@"}`, `{"bootDelay":"-1s"}`,
		`{"capacity":{"cpu":@}}`, `{"capacity":"@"}`, "\f{}", `{"x":"@"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = bytes.ReplaceAll(raw, []byte("@"), []byte(providerSpecCanary))
		spec, err := parseProviderSpec(raw)
		if err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("code %v: %v", status.Code(err), err)
			}
			if strings.Contains(err.Error(), providerSpecCanary) {
				t.Fatalf("the error quotes the provider spec: %v", err)
			}
			return
		}
		spaced := append(append([]byte(" \n"), raw...), '\t')
		again, err := parseProviderSpec(spaced)
		if err != nil || again.hash != spec.hash {
			t.Fatalf("the same spec with JSON white space around it: %v, hash %s vs %s", err, again.hash, spec.hash)
		}
	})
}
