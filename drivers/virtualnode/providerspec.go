package virtualnode

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/machina-io/machina/sdk"
)

// providerSpec is what the driver understands of a class's provider spec.
type providerSpec struct {
	capacity  map[string]string
	bootDelay time.Duration
	// hash is the SHA-256 of the spec re-encoded with sorted keys, so that
	// two encodings of one object hash alike.
	hash string
}

// providerSpecJSON is the JSON shape of the keys the driver interprets.
type providerSpecJSON struct {
	Capacity  map[string]string `json:"capacity"`
	BootDelay *string           `json:"bootDelay"`
}

// parseProviderSpec parses machine_class.provider_spec: a JSON object with
// the optional keys "capacity" (resource name to quantity string) and
// "bootDelay" (a duration string such as "30s"); other keys are ignored.
func parseProviderSpec(raw []byte) (providerSpec, error) {
	var spec providerSpec
	var fields providerSpecJSON
	if err := sdk.DecodeProviderSpec(raw, &fields); err != nil {
		return spec, err
	}
	spec.capacity = fields.Capacity
	if fields.BootDelay != nil {
		d, err := time.ParseDuration(*fields.BootDelay)
		if err != nil || d < 0 {
			// Not quoted: provider spec values stay out of errors.
			return spec, sdk.InvalidArgument("machine_class.provider_spec.bootDelay is not a non-negative duration such as \"30s\"")
		}
		spec.bootDelay = d
	}
	canonical, err := sdk.CanonicalProviderSpec(raw)
	if err != nil {
		return spec, err
	}
	sum := sha256.Sum256(canonical)
	spec.hash = hex.EncodeToString(sum[:])
	return spec, nil
}
