package sanitize

import (
	"encoding/base64"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// fuzzMessages are the Driver API's messages, in a fixed order, so that a
// fuzz input picks one by index.
var fuzzMessages = func() []protoreflect.MessageType {
	var out []protoreflect.MessageType
	for _, file := range driverFiles {
		for _, md := range allMessages(file.Messages()) {
			mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
			if err != nil {
				panic(err)
			}
			out = append(out, mt)
		}
	}
	return out
}()

// plantSecret sets every secret field of m (and everything below one) to a
// value holding secret, keeping what the fuzzer put elsewhere.
func plantSecret(m protoreflect.Message, secret string, inSecret bool, depth int) {
	if depth > maxFillDepth {
		return
	}
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		secretHere := inSecret || optSecret(fd)
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			if fd.MapValue().Message() == nil && secretHere && fd.MapKey().Kind() == protoreflect.StringKind {
				mp.Set(protoreflect.ValueOfString("planted").MapKey(), secretScalar(fd.MapValue(), secret))
			}
			mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
				if fd.MapValue().Message() != nil {
					plantSecret(v.Message(), secret, secretHere, depth+1)
				} else if secretHere {
					mp.Set(k, secretScalar(fd.MapValue(), secret))
				}
				return true
			})
		case fd.IsList():
			list := m.Mutable(fd).List()
			for j := 0; j < list.Len(); j++ {
				if fd.Message() != nil {
					plantSecret(list.Get(j).Message(), secret, secretHere, depth+1)
				} else if secretHere {
					list.Set(j, secretScalar(fd, secret))
				}
			}
		case fd.Message() != nil:
			if m.Has(fd) || secretHere {
				plantSecret(m.Mutable(fd).Message(), secret, secretHere, depth+1)
			}
		case secretHere && (fd.Kind() == protoreflect.StringKind || fd.Kind() == protoreflect.BytesKind):
			m.Set(fd, secretScalar(fd, secret))
		}
	}
}

func secretScalar(fd protoreflect.FieldDescriptor, secret string) protoreflect.Value {
	if fd.Kind() == protoreflect.BytesKind {
		return protoreflect.ValueOfBytes([]byte(secret))
	}
	return protoreflect.ValueOfString(secret)
}

// FuzzSanitizeString decodes arbitrary wire bytes into any Driver API
// message, plants a secret (the canary plus a fuzzed suffix) in every secret
// field, and checks the property the whole project relies on: String never
// shows the secret, raw or base64-encoded (protojson's form of bytes), and
// never changes its input.
func FuzzSanitizeString(f *testing.F) {
	for i, mt := range fuzzMessages {
		m := mt.New().Interface()
		(&filler{}).fill(m.ProtoReflect(), false, 0)
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), b, "")
	}
	f.Add(uint8(0), []byte{}, "\x00\xff")
	f.Fuzz(func(t *testing.T, which uint8, wire []byte, suffix string) {
		if strings.Contains(string(wire), canary) {
			return // the fuzzer put the canary into a non-secret field itself
		}
		mt := fuzzMessages[int(which)%len(fuzzMessages)]
		m := mt.New().Interface()
		if err := (proto.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(wire, m); err != nil {
			return
		}
		secret := canary + suffix
		plantSecret(m.ProtoReflect(), secret, false, 0)
		before := proto.Clone(m)
		out := String(m)
		// The canary is 18 bytes, so its base64 form is a prefix of the
		// secret's whatever the suffix.
		if strings.Contains(out, canary) || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte(canary))) {
			t.Fatalf("secret of %s in the sanitized rendering: %s", mt.Descriptor().FullName(), out)
		}
		if !proto.Equal(before, m) {
			t.Fatalf("String changed its input %s", mt.Descriptor().FullName())
		}
		if list := String([]proto.Message{m, m}); strings.Contains(list, canary) {
			t.Fatalf("secret in a rendered list: %s", list)
		}
	})
}
