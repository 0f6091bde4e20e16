package sdk

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// providerSpecField is the request field path of a provider spec, the prefix
// of every error message below.
const providerSpecField = "machine_class.provider_spec"

// DecodeProviderSpec checks that raw, a request's machine_class.provider_spec,
// is present, within the Driver API's size limit and one JSON object, and
// decodes it into the value into points to (usually a struct with json tags).
//
// Keys that into has no field for are ignored, so that a MachineClass may
// carry settings for other tools or for a newer driver version.
//
// Every error is INVALID_ARGUMENT. Messages describe JSON kinds only and
// never quote a value: a kind mismatch names the field path, for example
// "machine_class.provider_spec.capacity has a number where a string is
// expected"; any other refusal (a ",string" field holding something else, a
// value refused by an UnmarshalJSON or UnmarshalText method such as
// time.Time's or netip.Addr's, which quote the value in their errors) is
// reported without the decoder's text. An UnmarshalJSON or UnmarshalText
// method of the driver's own that wants its message shown returns a status
// error made with InvalidArgument; its message is passed on as it is, so it
// must not hold secret values.
func DecodeProviderSpec(raw []byte, into any) error {
	if err := validateProviderSpec(raw); err != nil {
		return InvalidArgument("%s", err.Error())
	}
	err := json.Unmarshal(raw, into)
	if err == nil {
		return nil
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return kindMismatch(typeErr)
	}
	var invalid *json.InvalidUnmarshalError
	if errors.As(err, &invalid) {
		// A nil or non-pointer into is a bug in the driver, not in the request.
		return Internal("decoding %s: %v", providerSpecField, err)
	}
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		// Validation parsed the same bytes, so this cannot happen; the
		// decoder's text would quote a character of the spec.
		return InvalidArgument("%s is not valid JSON (at byte %d)", providerSpecField, syntax.Offset)
	}
	if st, ok := status.FromError(err); ok && st.Code() == codes.InvalidArgument {
		return st.Err()
	}
	return InvalidArgument("%s does not decode: a value does not have the form its field needs "+
		"(for example a \",string\" field that holds no quoted value of its type, or a malformed time or address)", providerSpecField)
}

// CanonicalProviderSpec returns raw, a JSON document such as a provider spec
// that DecodeProviderSpec accepted, re-encoded with object keys sorted at
// every level and without insignificant white space. Numbers keep the digits
// they were written with. Two encodings of the same object therefore give
// the same bytes, which is what CreateMachine's idempotency needs: a repeated
// request is compatible when its canonical spec equals the one the VM was
// created with, however the core happened to serialise it.
func CanonicalProviderSpec(raw []byte) ([]byte, error) {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, InvalidArgument("%s must be a JSON object", providerSpecField)
	}
	canonical, err := json.Marshal(v)
	if err != nil {
		// The decoder produced the value, so this cannot happen; the
		// encoder's text would quote a number of the spec.
		return nil, InvalidArgument("%s cannot be re-encoded", providerSpecField)
	}
	return canonical, nil
}

// kindMismatch turns a JSON type error into a message that names the field
// path and the JSON kinds involved. The decoder reports the field path in
// JSON key names but not map keys, so for a map of the wrong element kind
// the path ends at the map.
func kindMismatch(e *json.UnmarshalTypeError) error {
	field := providerSpecField
	if e.Field != "" {
		field += "." + e.Field
	}
	// Value is "number", "string", "bool", "array", "object", or "number 1.5"
	// for a number that does not fit the target type.
	got, _, _ := strings.Cut(e.Value, " ")
	want := jsonKind(e.Type)
	if got == "number" && want == "a number" {
		return InvalidArgument("%s has a number that does not fit %s", field, e.Type)
	}
	return InvalidArgument("%s has %s where %s is expected", field, withArticle(got), want)
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// jsonKind names the kind of JSON value that decodes into t.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "an array"
	case reflect.Array:
		return "an array"
	}
	return "a " + t.String()
}

// withArticle puts "a" or "an" before a JSON kind reported by the decoder.
func withArticle(kind string) string {
	switch kind {
	case "":
		return "a value"
	case "array", "object":
		return "an " + kind
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}
