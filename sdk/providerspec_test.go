package sdk

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// exampleSpec is the kind of struct a driver decodes its provider spec into.
type exampleSpec struct {
	Capacity map[string]string `json:"capacity"`
	Image    string            `json:"image"`
	Disks    []struct {
		SizeGiB uint16 `json:"sizeGiB"`
	} `json:"disks"`
	Spot    *bool      `json:"spot"`
	Address netip.Addr `json:"address"`
	Blob    []byte     `json:"blob"`
	Since   time.Time  `json:"since"`
	Count   int        `json:"count,string"`
	Size    giB        `json:"size"`
}

// giB is a driver's own type whose UnmarshalJSON reports a status error, the
// way to have a message shown.
type giB int

func (g *giB) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil || !strings.HasSuffix(s, "Gi") {
		return InvalidArgument("machine_class.provider_spec.size must end in Gi")
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s, "Gi"))
	if err != nil {
		return InvalidArgument("machine_class.provider_spec.size must be a whole number of Gi")
	}
	*g = giB(n)
	return nil
}

func TestDecodeProviderSpecAcceptsAnObjectAndIgnoresUnknownKeys(t *testing.T) {
	var spec exampleSpec
	err := DecodeProviderSpec([]byte(` {"image":"debian","capacity":{"cpu":"2"},"disks":[{"sizeGiB":20}],"spot":true,"zone":"x"} `), &spec)
	require.NoError(t, err)
	assert.Equal(t, "debian", spec.Image)
	assert.Equal(t, map[string]string{"cpu": "2"}, spec.Capacity)
	require.Len(t, spec.Disks, 1)
	assert.Equal(t, uint16(20), spec.Disks[0].SizeGiB)
	require.NotNil(t, spec.Spot)
	assert.True(t, *spec.Spot)
}

func TestDecodeProviderSpecErrors(t *testing.T) {
	tests := map[string]struct {
		raw  string
		want string
	}{
		"empty":              {"", "machine_class.provider_spec is required"},
		"not JSON":           {"cpu: 2", "machine_class.provider_spec must be a JSON object"},
		"null":               {"null", "machine_class.provider_spec must be a JSON object"},
		"array":              {"[1,2]", "machine_class.provider_spec must be a JSON object"},
		"string":             {`"{}"`, "machine_class.provider_spec must be a JSON object"},
		"trailing garbage":   {`{} {}`, "machine_class.provider_spec must be a JSON object"},
		"map of wrong kind":  {`{"capacity":"lots"}`, "machine_class.provider_spec.capacity has a string where an object is expected"},
		"map element kind":   {`{"capacity":{"cpu":2}}`, "machine_class.provider_spec.capacity has a number where a string is expected"},
		"nested field":       {`{"disks":[{"sizeGiB":"big"}]}`, "machine_class.provider_spec.disks.sizeGiB has a string where a number is expected"},
		"number out of type": {`{"disks":[{"sizeGiB":70000}]}`, "machine_class.provider_spec.disks.sizeGiB has a number that does not fit uint16"},
		"pointer target":     {`{"spot":"yes"}`, "machine_class.provider_spec.spot has a string where a boolean is expected"},
		"text unmarshaler":   {`{"address":5}`, "machine_class.provider_spec.address has a number where a string is expected"},
		"bytes":              {`{"blob":5}`, "machine_class.provider_spec.blob has a number where a base64 string is expected"},
		"bool for a string":  {`{"image":false}`, "machine_class.provider_spec.image has a boolean where a string is expected"},
		"object for a list":  {`{"disks":{}}`, "machine_class.provider_spec.disks has an object where an array is expected"},
		"unmarshaler error":  {`{"address":"nowhere"}`, "machine_class.provider_spec does not decode: a value does not have the form its field needs"},
		"time":               {`{"since":"yesterday"}`, "machine_class.provider_spec does not decode: a value does not have the form its field needs"},
		",string wrong form": {`{"count":"many"}`, "machine_class.provider_spec does not decode: a value does not have the form its field needs"},
		",string unquoted":   {`{"count":5}`, "machine_class.provider_spec does not decode: a value does not have the form its field needs"},
		"own status error":   {`{"size":"huge"}`, "machine_class.provider_spec.size must end in Gi"},
		// RFC 8259 white space is space, tab, line feed and carriage return
		// only; validation and decoding agree that nothing else is JSON.
		"form feed before":      {"\f{}", "machine_class.provider_spec must be a JSON object"},
		"no-break space after":  {"{}\u00a0", "machine_class.provider_spec must be a JSON object"},
		"ideographic space":     {"\u3000{}", "machine_class.provider_spec must be a JSON object"},
		"vertical tab":          {"{\v}", "machine_class.provider_spec must be a JSON object"},
		"no-break space inside": {"{\u00a0}", "machine_class.provider_spec must be a JSON object"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var spec exampleSpec
			err := DecodeProviderSpec([]byte(tc.raw), &spec)
			require.Error(t, err)
			assert.Equal(t, codes.InvalidArgument, status.Code(err))
			assert.True(t, strings.HasPrefix(status.Convert(err).Message(), tc.want), "message %q, want prefix %q", status.Convert(err).Message(), tc.want)
		})
	}
}

func TestDecodeProviderSpecNeverQuotesValues(t *testing.T) {
	for _, raw := range []string{
		`{"capacity":{"cpu":"` + canary + `","mem":7}}`,
		`{"count":"` + canary + `"}`,
		`{"count":"\"` + canary + `"}`,
		`{"since":"` + canary + `"}`,
		`{"address":"` + canary + `"}`,
		`{"disks":[{"sizeGiB":"` + canary + `"}]}`,
	} {
		var spec exampleSpec
		err := DecodeProviderSpec([]byte(raw), &spec)
		require.Error(t, err, raw)
		assert.NotContains(t, err.Error(), canary, raw)
		assert.NotContains(t, err.Error(), "mem", raw)
	}
}

func TestDecodeProviderSpecTooLarge(t *testing.T) {
	raw := []byte(`{"image":"` + strings.Repeat("x", maxProviderSpecBytes) + `"}`)
	var spec exampleSpec
	err := DecodeProviderSpec(raw, &spec)
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
	assert.Contains(t, err.Error(), "machine_class.provider_spec is")
	assert.Empty(t, spec.Image, "an oversized spec must not be decoded")
}

func TestDecodeProviderSpecIntoNonPointerIsInternal(t *testing.T) {
	err := DecodeProviderSpec([]byte(`{}`), exampleSpec{})
	assert.Equal(t, codes.Internal, status.Code(err))
}

func TestDecodeProviderSpecErrorIsAStatus(t *testing.T) {
	var spec exampleSpec
	err := DecodeProviderSpec([]byte(`[]`), &spec)
	var s interface{ GRPCStatus() *status.Status }
	assert.True(t, errors.As(err, &s), "drivers return the error as is, so it must carry its gRPC code")
}

func TestCanonicalProviderSpec(t *testing.T) {
	a, err := CanonicalProviderSpec([]byte(`{"b":{"y":1,"x":[2,{"d":1,"c":2}]},"a":"s"}`))
	require.NoError(t, err)
	b, err := CanonicalProviderSpec([]byte("{ \"a\": \"s\",\n \"b\": { \"x\": [2, {\"c\": 2, \"d\": 1}], \"y\": 1 } }"))
	require.NoError(t, err)
	assert.Equal(t, `{"a":"s","b":{"x":[2,{"c":2,"d":1}],"y":1}}`, string(a))
	assert.Equal(t, a, b)

	// Numbers keep their digits: no float rounding, no exponent rewriting.
	n, err := CanonicalProviderSpec([]byte(`{"big":12345678901234567890,"f":1.50,"e":1e3}`))
	require.NoError(t, err)
	assert.Equal(t, `{"big":12345678901234567890,"e":1e3,"f":1.50}`, string(n))

	// A different object gives different bytes.
	c, err := CanonicalProviderSpec([]byte(`{"a":"s","b":{"x":[{"c":2,"d":1},2],"y":1}}`))
	require.NoError(t, err)
	assert.NotEqual(t, a, c)

	_, err = CanonicalProviderSpec([]byte(`{`))
	assert.Equal(t, codes.InvalidArgument, status.Code(err))
}
