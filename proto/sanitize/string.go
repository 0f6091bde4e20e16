package sanitize

import (
	"fmt"
	"reflect"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// String renders v for a log line or an error message. A proto.Message is
// rendered as compact protojson of Message(v), so no secret is in the
// result, except that a bytes field holding JSON (MachineClass.provider_spec)
// shows the JSON object rather than base64, with the value of every
// secret-looking key (password, token, secret, accessKey, ...) replaced by
// Redacted; when its bytes are not valid JSON, only their length is shown. A slice or array of proto messages is rendered element by element
// the same way. Any other value is formatted with fmt's %v.
//
// Generated messages also have a String method, but it prints secrets; pass
// messages to this function instead of formatting them directly.
func String(v any) string {
	switch x := v.(type) {
	case nil:
		return "<nil>"
	case proto.Message:
		return messageString(x)
	}
	if s, ok := listString(v); ok {
		return s
	}
	return fmt.Sprintf("%v", v)
}

// Both formats print on one line, leave unpopulated fields out to keep log
// lines short and show enums by name.
var (
	jsonOptions = protojson.MarshalOptions{}
	textOptions = prototext.MarshalOptions{}
)

func messageString(m proto.Message) string {
	if !m.ProtoReflect().IsValid() {
		return "<nil>"
	}
	if !needsStripping(m.ProtoReflect().Descriptor()) {
		// Nothing in a message of this type can hold a secret or JSON to
		// render (a driver's response, mostly): marshal it as it is rather
		// than a copy. protojson leaves unknown fields out.
		if b, err := jsonOptions.Marshal(m); err == nil {
			return string(b)
		}
	}
	clean := proto.Clone(m)
	var j jsonRenderings
	stripMessage(clean.ProtoReflect(), false, 0, &j)
	b, err := jsonOptions.Marshal(clean)
	if err == nil {
		return j.fill(string(b), true)
	}
	// protojson fails on an Any whose type is unknown here; the text format
	// renders it. Both render the sanitized copy, never the input.
	if b, err := textOptions.Marshal(clean); err == nil {
		return j.fill(string(b), false)
	}
	return fmt.Sprintf("<unprintable %s>", m.ProtoReflect().Descriptor().FullName())
}

var messageType = reflect.TypeFor[proto.Message]()

// listString renders a slice or array whose element type is a proto
// message type; fmt would otherwise call each element's own String method,
// which does not strip secrets.
func listString(v any) (string, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return "", false
	}
	if !rv.Type().Elem().Implements(messageType) {
		return "", false
	}
	parts := make([]string, rv.Len())
	for i := range parts {
		parts[i] = String(rv.Index(i).Interface())
	}
	return "[" + strings.Join(parts, " ") + "]", true
}
