package v1alpha1

import (
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"
)

// MaxDuration is the longest duration a timeout field accepts: ten years,
// "87600h". It is far beyond any timeout a fleet needs (a "never" in
// practice) and far below what Go's time.Duration can hold, so adding it to
// a timestamp cannot overflow. The CRD schema refuses longer values and
// negative ones (durationRule).
const MaxDuration = 87600 * time.Hour

// maxDurationText is MaxDuration as the CRD rule writes it.
const maxDurationText = "87600h"

// MaxDurationLength is the most characters a duration may have. Within it no
// string the schema's regular expression admits can overflow Go's parser, so
// the CEL rule never fails to evaluate (see MachineConfiguration).
const MaxDurationLength = 64

// Duration is a timeout of the spec: on the wire exactly a
// metav1.Duration, a Go duration string such as "10m" or "2h30m".
//
// It differs from metav1.Duration in one way: decoding never fails. A value
// Go cannot parse (stored before the schema refused it, or written past the
// schema) is kept as written and reported by Err, instead of failing the
// decoding of the whole object, and with it of every list and watch of its
// kind: one such value used to stop every controller of the namespace.
// Controllers refuse an object whose Err is not nil, naming the field
// (MachineConfiguration.InvalidDurations).
//
// +kubebuilder:validation:Type=string
type Duration struct {
	time.Duration `protobuf:"varint,1,opt,name=duration,casttype=time.Duration"`

	// Raw is, for a value that is not a duration from 0 to MaxDuration, the
	// JSON text it was read from, written back unchanged so that no update
	// of the object loses what the user wrote; empty for a usable value.
	// Set by UnmarshalJSON. (Exported because the API machinery's semantic
	// equality refuses unexported fields; a string, so a copy copies it.)
	Raw string `json:"-"`
}

// NewDuration returns a valid Duration of d.
func NewDuration(d time.Duration) *Duration { return &Duration{Duration: d} }

// Err tells why the decoded value is not a usable duration, or nil.
func (d *Duration) Err() error {
	if d == nil || d.Raw == "" {
		return nil
	}
	var s string
	if err := json.Unmarshal([]byte(d.Raw), &s); err != nil {
		return fmt.Errorf("%s is not a string", d.Raw)
	}
	return CheckDuration(s)
}

// CheckDuration tells whether s is a duration the schema accepts: at most
// MaxDurationLength characters that Go's time.ParseDuration parses, from 0
// to MaxDuration. The CRD rule
// (durationRule) is the same check in CEL, whose duration() is Go's parser.
func CheckDuration(s string) error {
	if n := utf8.RuneCountInString(s); n > MaxDurationLength {
		return fmt.Errorf("%q is longer than %d characters", s, MaxDurationLength)
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a duration Go can parse (such as 10m or 2h30m)", s)
	case d < 0:
		return fmt.Errorf("%q is negative", s)
	case d > MaxDuration:
		return fmt.Errorf("%q is longer than the maximum of %s", s, maxDurationText)
	}
	return nil
}

// UnmarshalJSON implements json.Unmarshaler. It fails only on malformed
// JSON; a string that is not a valid duration is kept for Err.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		// Not a string: kept, like a bad string, so the object decodes.
		if !json.Valid(b) {
			return err
		}
		*d = Duration{Raw: string(b)}
		return nil
	}
	if CheckDuration(s) != nil {
		pd, _ := time.ParseDuration(s) // 0 when Go cannot parse it
		*d = Duration{Duration: pd, Raw: string(b)}
		return nil
	}
	pd, _ := time.ParseDuration(s)
	*d = Duration{Duration: pd}
	return nil
}

// MarshalJSON implements json.Marshaler: a valid value as metav1.Duration
// writes it ("2h0m0s"), an invalid one as it was read.
func (d Duration) MarshalJSON() ([]byte, error) {
	if d.Raw != "" {
		return []byte(d.Raw), nil
	}
	return json.Marshal(d.Duration.String())
}

// ToUnstructured implements the unstructured converter's interface, as
// metav1.Duration does.
func (d Duration) ToUnstructured() any {
	if d.Raw != "" {
		var v any
		if err := json.Unmarshal([]byte(d.Raw), &v); err == nil {
			return v
		}
	}
	return d.Duration.String()
}

// OpenAPISchemaType is the type of Duration in OpenAPI, as for
// metav1.Duration.
func (Duration) OpenAPISchemaType() []string { return []string{"string"} }

// OpenAPISchemaFormat is the format of Duration in OpenAPI: none.
func (Duration) OpenAPISchemaFormat() string { return "" }

// InvalidDurations lists the duration fields of c that are not usable, each
// as "<json name>: <why>", in field order; empty when all are fine. The
// controllers refuse to act on an object that has any (never falling back to
// a default for a value the user wrote).
func (c *MachineConfiguration) InvalidDurations() []string {
	if c == nil {
		return nil
	}
	var out []string
	for _, f := range []struct {
		name string
		d    *Duration
	}{
		{"drainTimeout", c.MachineDrainTimeout},
		{"healthTimeout", c.MachineHealthTimeout},
		{"creationTimeout", c.MachineCreationTimeout},
		{"inPlaceUpdateTimeout", c.MachineInPlaceUpdateTimeout},
		{"machinePreserveTimeout", c.MachinePreserveTimeout},
		{"expireAfter", c.MachineExpireAfter},
	} {
		if err := f.d.Err(); err != nil {
			out = append(out, f.name+": "+err.Error())
		}
	}
	return out
}
