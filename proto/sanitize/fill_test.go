package sanitize

import (
	"encoding/base64"
	"testing"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/anypb"
)

// canary is the value every secret field is filled with. Any appearance of
// it (or of its base64 form, which is how protojson renders bytes) in a
// sanitized rendering is a leak.
const canary = "CANARY-SECRET-7f3a"

// maxFillDepth stops the filler in self-nesting message types.
const maxFillDepth = 4

// filler populates every field of a message generically: secret fields (and
// everything inside a secret message field) get the canary, other string
// and bytes fields get a value unique to the field, which is remembered so a
// test can assert that it is still visible after sanitizing.
type filler struct {
	// visible are substrings the rendering must still contain.
	visible []string
	// secretFields are the full names of the secret fields that were filled.
	secretFields []protoreflect.FullName
}

func optSecret(fd protoreflect.FieldDescriptor) bool {
	b, _ := proto.GetExtension(fd.Options(), driverv1alpha1.E_Secret).(bool)
	return b
}

func (f *filler) fill(m protoreflect.Message, inSecret bool, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		// Only the first member of a oneof is set: setting a second one
		// would replace it. Tests cover the other members explicitly.
		if od := fd.ContainingOneof(); od != nil && !od.IsSynthetic() && od.Fields().Get(0) != fd {
			continue
		}
		secret := inSecret || optSecret(fd)
		if optSecret(fd) {
			f.secretFields = append(f.secretFields, fd.FullName())
		}
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil && depth >= maxFillDepth {
				continue
			}
			mp := m.Mutable(fd).Map()
			key := f.mapKey(fd)
			if fd.MapValue().Message() != nil {
				f.fill(mp.Mutable(key).Message(), secret, depth+1)
			} else {
				mp.Set(key, f.scalar(fd.MapValue(), secret))
			}
		case fd.IsList():
			if fd.Message() != nil && depth >= maxFillDepth {
				continue
			}
			list := m.Mutable(fd).List()
			for range 2 {
				if fd.Message() != nil {
					f.fill(list.AppendMutable().Message(), secret, depth+1)
				} else {
					list.Append(f.scalar(fd, secret))
				}
			}
		case fd.Message() != nil && fd.Message().FullName() == anyFullName:
			// An Any needs a payload of a known type: a filled Machine.
			inner := &driverv1alpha1.Machine{}
			f.fill(inner.ProtoReflect(), secret, depth+1)
			packed, err := anypb.New(inner)
			if err != nil {
				panic(err)
			}
			m.Set(fd, protoreflect.ValueOfMessage(packed.ProtoReflect()))
		case fd.Message() != nil:
			if depth >= maxFillDepth {
				continue
			}
			f.fill(m.Mutable(fd).Message(), secret, depth+1)
		default:
			m.Set(fd, f.scalar(fd, secret))
		}
	}
}

// mapKey returns a key for a map field. Keys of secret maps stay visible by
// design (they name the secret, they are not the secret).
func (f *filler) mapKey(fd protoreflect.FieldDescriptor) protoreflect.MapKey {
	switch fd.MapKey().Kind() {
	case protoreflect.StringKind:
		k := "key-" + string(fd.Name())
		f.visible = append(f.visible, k)
		return protoreflect.ValueOfString(k).MapKey()
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true).MapKey()
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7).MapKey()
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7).MapKey()
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7).MapKey()
	default:
		return protoreflect.ValueOfInt64(7).MapKey()
	}
}

func (f *filler) scalar(fd protoreflect.FieldDescriptor, secret bool) protoreflect.Value {
	switch fd.Kind() {
	case protoreflect.StringKind:
		if secret {
			return protoreflect.ValueOfString(canary)
		}
		v := "visible-" + string(fd.FullName())
		f.visible = append(f.visible, v)
		return protoreflect.ValueOfString(v)
	case protoreflect.BytesKind:
		if secret {
			return protoreflect.ValueOfBytes([]byte(canary))
		}
		// A JSON object, so that fields like provider_spec hold realistic
		// content; protojson shows bytes base64-encoded, String shows a
		// JSON field as the object.
		v := `{"visible":"` + string(fd.FullName()) + `"}`
		if jsonFields[fd.FullName()] {
			f.visible = append(f.visible, v)
		} else {
			f.visible = append(f.visible, base64.StdEncoding.EncodeToString([]byte(v)))
		}
		return protoreflect.ValueOfBytes([]byte(v))
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(true)
	case protoreflect.EnumKind:
		values := fd.Enum().Values()
		return protoreflect.ValueOfEnum(values.Get(values.Len() - 1).Number())
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(7)
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(7)
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(7)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(7)
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(1.5)
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(1.5)
	}
	panic("unhandled kind " + fd.Kind().String())
}

// assertNoCanary fails when the canary, raw or base64-encoded, is in s.
func assertNoCanary(t *testing.T, s string) {
	t.Helper()
	assert.NotContains(t, s, canary)
	assert.NotContains(t, s, base64.StdEncoding.EncodeToString([]byte(canary)))
}

// assertStripped walks a sanitized message and checks the contract of
// Message structurally: inside a secret field, every string and bytes value
// is Redacted and no other scalar is set.
func assertStripped(t *testing.T, m protoreflect.Message, inSecret bool) {
	t.Helper()
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		secret := inSecret || optSecret(fd)
		check := func(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
			switch {
			case fd.Message() != nil:
				assertStripped(t, v.Message(), secret)
			case !secret:
			case fd.Kind() == protoreflect.StringKind:
				assert.Equal(t, Redacted, v.String(), "field %s", fd.FullName())
			case fd.Kind() == protoreflect.BytesKind:
				assert.Equal(t, Redacted, string(v.Bytes()), "field %s", fd.FullName())
			default:
				assert.Failf(t, "secret scalar left set", "field %s = %v", fd.FullName(), v)
			}
		}
		switch {
		case fd.IsList():
			for i := 0; i < v.List().Len(); i++ {
				check(fd, v.List().Get(i))
			}
		case fd.IsMap():
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				check(fd.MapValue(), mv)
				return true
			})
		default:
			check(fd, v)
		}
		return true
	})
}

// checkSanitized fills m, sanitizes it and asserts: no canary in String,
// every visible value still in String, the input unchanged, and the secret
// fields replaced as documented. It returns the filler for further checks.
func checkSanitized(t *testing.T, m proto.Message) *filler {
	t.Helper()
	f := &filler{}
	f.fill(m.ProtoReflect(), false, 0)
	before := proto.Clone(m)

	out := String(m)
	assertNoCanary(t, out)
	for _, v := range f.visible {
		assert.Contains(t, out, v)
	}
	sanitized := Message(m)
	require.NotNil(t, sanitized)
	assertStripped(t, sanitized.ProtoReflect(), false)
	assert.True(t, proto.Equal(before, m), "input was modified")
	return f
}
