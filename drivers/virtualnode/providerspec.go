package virtualnode

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// providerSpec is what the driver understands of a class's provider spec.
type providerSpec struct {
	capacity  map[string]string
	bootDelay time.Duration
	// hash is the SHA-256 of the spec re-encoded with sorted keys, so that
	// two encodings of one object hash alike.
	hash string
}

func invalid(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// parseProviderSpec parses machine_class.provider_spec: a JSON object with
// the optional keys "capacity" and "bootDelay".
func parseProviderSpec(raw []byte) (providerSpec, error) {
	const path = "machine_class.provider_spec"
	var spec providerSpec
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil || fields == nil {
		return spec, invalid("%s must be a JSON object", path)
	}
	if c, ok := fields["capacity"]; ok {
		if err := json.Unmarshal(c, &spec.capacity); err != nil {
			return spec, invalid("%s.capacity must map resource names to quantity strings", path)
		}
	}
	if b, ok := fields["bootDelay"]; ok {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return spec, invalid("%s.bootDelay must be a duration string such as \"30s\"", path)
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return spec, invalid("%s.bootDelay %q is not a non-negative duration", path, s)
		}
		spec.bootDelay = d
	}
	// Decoding into any and encoding again sorts object keys at every level;
	// UseNumber keeps numbers exactly as written.
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return spec, invalid("%s must be a JSON object", path)
	}
	canonical, err := json.Marshal(v)
	if err != nil {
		return spec, invalid("%s cannot be re-encoded: %v", path, err)
	}
	sum := sha256.Sum256(canonical)
	spec.hash = hex.EncodeToString(sum[:])
	return spec, nil
}
