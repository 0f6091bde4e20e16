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
	// inPlace, when set, makes the driver play the node agent of the
	// class's Nodes for in-place updates.
	inPlace *inPlaceSpec
	// machineConfig, when set, makes the driver play the node agent of
	// the class's Nodes in the MachineConfig handshake.
	machineConfig *inPlaceSpec
	// labels are put on the Node; UpdateMachine changes them on a running
	// Node.
	labels map[string]string
	// hash is the SHA-256 of the spec re-encoded with sorted keys, so that
	// two encodings of one object hash alike.
	hash string
}

// providerSpecJSON is the JSON shape of the keys the driver interprets.
type providerSpecJSON struct {
	Capacity      map[string]string  `json:"capacity"`
	BootDelay     *string            `json:"bootDelay"`
	InPlaceUpdate *inPlaceUpdateJSON `json:"inPlaceUpdate"`
	MachineConfig *inPlaceUpdateJSON `json:"machineConfig"`
	Labels        map[string]string  `json:"labels"`
}

// inPlaceUpdateJSON is the provider spec's "inPlaceUpdate" object, and
// its "machineConfig" object.
type inPlaceUpdateJSON struct {
	Duration    *string  `json:"duration"`
	FailureRate *float64 `json:"failureRate"`
}

// inPlaceSpec is how the class's simulated in-place (or MachineConfig)
// updates behave.
type inPlaceSpec struct {
	duration    time.Duration
	failureRate float64
}

// parseProviderSpec parses machine_class.provider_spec: a JSON object with
// the optional keys "capacity" (resource name to quantity string),
// "bootDelay" (a duration string such as "30s"), "inPlaceUpdate" and
// "machineConfig" (each {"duration": "5s", "failureRate": 0.1}, both
// optional) and "labels" (put on the Node, the one key UpdateMachine
// changes on a running Node); other keys are ignored.
func parseProviderSpec(raw []byte) (providerSpec, error) {
	var spec providerSpec
	var fields providerSpecJSON
	if err := sdk.DecodeProviderSpec(raw, &fields); err != nil {
		return spec, err
	}
	spec.capacity = fields.Capacity
	spec.labels = fields.Labels
	if fields.BootDelay != nil {
		d, err := time.ParseDuration(*fields.BootDelay)
		if err != nil || d < 0 {
			// Not quoted: provider spec values stay out of errors.
			return spec, sdk.InvalidArgument("machine_class.provider_spec.bootDelay is not a non-negative duration such as \"30s\"")
		}
		spec.bootDelay = d
	}
	var err error
	if spec.inPlace, err = parseSimulation(fields.InPlaceUpdate, "inPlaceUpdate"); err != nil {
		return spec, err
	}
	if spec.machineConfig, err = parseSimulation(fields.MachineConfig, "machineConfig"); err != nil {
		return spec, err
	}
	canonical, err := sdk.CanonicalProviderSpec(raw)
	if err != nil {
		return spec, err
	}
	sum := sha256.Sum256(canonical)
	spec.hash = hex.EncodeToString(sum[:])
	return spec, nil
}

// parseSimulation parses a simulated agent's {"duration", "failureRate"}
// object of the provider spec (key names it in errors); nil for none.
func parseSimulation(ip *inPlaceUpdateJSON, key string) (*inPlaceSpec, error) {
	if ip == nil {
		return nil, nil
	}
	out := &inPlaceSpec{}
	if ip.Duration != nil {
		d, err := time.ParseDuration(*ip.Duration)
		if err != nil || d < 0 {
			return nil, sdk.InvalidArgument("machine_class.provider_spec.%s.duration is not a non-negative duration such as \"5s\"", key)
		}
		out.duration = d
	}
	if ip.FailureRate != nil {
		if r := *ip.FailureRate; !(r >= 0 && r <= 1) {
			return nil, sdk.InvalidArgument("machine_class.provider_spec.%s.failureRate is not a probability between 0 and 1", key)
		}
		out.failureRate = *ip.FailureRate
	}
	return out, nil
}
