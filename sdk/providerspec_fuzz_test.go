package sdk

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fuzzSpec has a field of every kind a driver's provider spec struct uses,
// including the ones whose decoders quote values in their errors (",string"
// fields, time.Time, netip.Addr).
type fuzzSpec struct {
	exampleSpec
	Ratio   float64           `json:"ratio,string"`
	Flag    bool              `json:"flag,string"`
	Name    string            `json:"name,string"`
	Ptr     *int64            `json:"ptr,string"`
	Tags    map[string]int    `json:"tags"`
	Nested  map[string][]bool `json:"nested"`
	Numbers [2]uint8          `json:"numbers"`
	Any     any               `json:"any"`
}

// withCanary puts the canary wherever the fuzzer wrote '@': in values, keys
// and anywhere else, so that the corpus stays readable and any quoting of a
// value shows.
func withCanary(raw []byte) []byte {
	return bytes.ReplaceAll(raw, []byte("@"), []byte(canary))
}

// FuzzDecodeProviderSpec checks, for any bytes: decoding never panics; an
// error is INVALID_ARGUMENT (INTERNAL only for a bad target) and never
// contains a value of the spec; validation and decoding agree on what a JSON
// object is (a spec validation accepts decodes into a map, and the other way
// round); a decoded spec has a canonical form that is stable.
func FuzzDecodeProviderSpec(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` {"image":"@","capacity":{"cpu":"2"}} `, `{"count":"@"}`, `{"count":"\"@"}`, `{"count":@}`,
		`{"since":"@"}`, `{"address":"@"}`, `{"ratio":"@"}`, `{"flag":"@"}`, `{"name":"@"}`, `{"name":"\"@\""}`,
		`{"ptr":"@"}`, `{"tags":{"@":"@"}}`, `{"disks":[{"sizeGiB":"@"}]}`, `{"numbers":[1,2,"@"]}`,
		`{"size":"@"}`, `{"blob":"@"}`, "\f{}", "{}\u00a0", "\u3000{}", "{\"a\":1}\u2028", `{"a":"@"} {}`, `[@]`,
		`{"capacity":{"cpu":70000}}`, `{"disks":[{"sizeGiB":1e99}]}`, `{"any":{"@":[@]}}`, "{\"image\":\"\xff\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		raw = withCanary(raw)
		var spec fuzzSpec
		err := DecodeProviderSpec(raw, &spec)
		if err != nil {
			if c := status.Code(err); c != codes.InvalidArgument {
				t.Fatalf("code %v for %q: %v", c, raw, err)
			}
			if strings.Contains(err.Error(), canary) {
				t.Fatalf("the error quotes the spec: %v", err)
			}
		}

		// Validation and decoding agree: a spec validation accepts decodes
		// into a generic object and has a canonical form; one it refuses
		// does not decode into one either (size limit aside).
		validErr := validateProviderSpec(raw)
		var obj map[string]any
		decodeErr := json.Unmarshal(raw, &obj)
		isObject := decodeErr == nil && obj != nil
		if (validErr == nil) != (isObject && len(raw) <= maxProviderSpecBytes) {
			t.Fatalf("validation and decoding disagree on %q: validation %v, decoding %v", raw, validErr, decodeErr)
		}
		if validErr != nil {
			if err == nil {
				t.Fatalf("DecodeProviderSpec accepted %q, which validation refuses: %v", raw, validErr)
			}
			return
		}
		c1, err := CanonicalProviderSpec(raw)
		if err != nil {
			t.Fatalf("no canonical form for a valid spec %q: %v", raw, err)
		}
		c2, err := CanonicalProviderSpec(c1)
		if err != nil || !bytes.Equal(c1, c2) {
			t.Fatalf("canonical form is not stable: %q -> %q (%v)", c1, c2, err)
		}
		if validateProviderSpec(c1) != nil {
			t.Fatalf("the canonical form %q of a valid spec is not valid", c1)
		}
	})
}
