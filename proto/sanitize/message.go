package sanitize

import (
	"sync"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
)

// Redacted replaces the value of every secret string or bytes field. In a
// bytes field it is stored as its UTF-8 bytes, so protojson (which renders
// bytes as base64) shows it as "Kioqc3RyaXBwZWQqKio=".
const Redacted = "***stripped***"

// maxDepth bounds the recursion into nested messages. Real messages are far
// shallower; the bound only protects against pathological (self-nesting)
// inputs, whose deeper levels are cleared rather than left unsanitized.
const maxDepth = 100

// Message returns a deep copy of m in which every field marked secret is
// replaced:
//   - string and bytes values become Redacted;
//   - lists and maps of them have each element (map value) replaced, so the
//     number of entries and the map keys stay visible;
//   - a secret field of message type has every field inside it treated as
//     secret;
//   - secret numbers, booleans and enums are cleared, as they cannot hold
//     the Redacted marker.
//
// Non-secret nested messages (also inside lists, maps, oneofs and
// google.protobuf.Any) are searched for secret fields too. Unknown fields are
// dropped, because nothing tells whether they are secret. The input is not
// modified. A nil m yields nil.
func Message(m proto.Message) proto.Message {
	if m == nil {
		return nil
	}
	out := proto.Clone(m)
	if out == nil {
		return nil
	}
	r := out.ProtoReflect()
	if !r.IsValid() {
		// A typed nil pointer: there is nothing to strip.
		return out
	}
	stripMessage(r, false, 0, nil)
	return out
}

// stripMessage sanitizes m in place. When all is true, every field of m is
// treated as secret (m is the value of a secret field). When j is not nil
// (String), the value of each non-secret JSON field is replaced by a
// placeholder for its rendering.
func stripMessage(m protoreflect.Message, all bool, depth int, j *jsonRenderings) {
	if depth > maxDepth {
		clearMessage(m)
		return
	}
	if m.GetUnknown() != nil {
		m.SetUnknown(nil)
	}
	if m.Descriptor().FullName() == anyFullName {
		stripAny(m, all, depth, j)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		secret := all || isSecret(fd)
		switch {
		case fd.IsList():
			if secret && fd.Message() == nil && !redactable(fd.Kind()) {
				m.Clear(fd)
				break
			}
			list := v.List()
			for i := 0; i < list.Len(); i++ {
				if fd.Message() != nil {
					stripMessage(list.Get(i).Message(), secret, depth+1, j)
				} else if secret {
					list.Set(i, redacted(fd.Kind()))
				}
			}
		case fd.IsMap():
			mp := v.Map()
			valueFD := fd.MapValue()
			if valueFD.Message() != nil {
				mp.Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
					stripMessage(mv.Message(), secret, depth+1, j)
					return true
				})
			} else if secret {
				if !redactable(valueFD.Kind()) {
					m.Clear(fd)
					break
				}
				// Collect the keys first: setting entries while ranging
				// over the same map is not allowed.
				var keys []protoreflect.MapKey
				mp.Range(func(k protoreflect.MapKey, _ protoreflect.Value) bool {
					keys = append(keys, k)
					return true
				})
				for _, k := range keys {
					mp.Set(k, redacted(valueFD.Kind()))
				}
			}
		case fd.Message() != nil:
			stripMessage(v.Message(), secret, depth+1, j)
		case secret:
			if redactable(fd.Kind()) {
				m.Set(fd, redacted(fd.Kind()))
			} else {
				m.Clear(fd)
			}
		case j != nil && fd.Kind() == protoreflect.BytesKind && jsonFields[fd.FullName()]:
			m.Set(fd, protoreflect.ValueOfBytes(j.hold(v.Bytes())))
		}
		return true
	})
}

// anyFullName is the name of google.protobuf.Any, whose payload is a
// serialized message that may hold secrets of its own.
var anyFullName = (&anypb.Any{}).ProtoReflect().Descriptor().FullName()

// stripAny sanitizes the message packed in a google.protobuf.Any. A payload
// of a type this process does not know cannot be inspected and is dropped.
func stripAny(m protoreflect.Message, all bool, depth int, j *jsonRenderings) {
	fields := m.Descriptor().Fields()
	typeURLField, valueField := fields.ByName("type_url"), fields.ByName("value")
	if typeURLField == nil || valueField == nil || !m.Has(valueField) {
		return
	}
	typeURL := m.Get(typeURLField).String()
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if err != nil {
		m.Clear(valueField)
		return
	}
	inner := mt.New()
	if err := proto.Unmarshal(m.Get(valueField).Bytes(), inner.Interface()); err != nil {
		m.Clear(valueField)
		return
	}
	stripMessage(inner, all, depth+1, j)
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(inner.Interface())
	if err != nil {
		m.Clear(valueField)
		return
	}
	m.Set(valueField, protoreflect.ValueOfBytes(b))
}

// clearMessage removes every field of m.
func clearMessage(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		m.Clear(fd)
		return true
	})
	m.SetUnknown(nil)
}

// redactable reports whether a field of kind k can hold the Redacted marker.
func redactable(k protoreflect.Kind) bool {
	return k == protoreflect.StringKind || k == protoreflect.BytesKind
}

// redacted returns the replacement for one secret value of kind k, which
// must be redactable.
func redacted(k protoreflect.Kind) protoreflect.Value {
	if k == protoreflect.BytesKind {
		return protoreflect.ValueOfBytes([]byte(Redacted))
	}
	return protoreflect.ValueOfString(Redacted)
}

// secretCache remembers the secret option per field descriptor; reading an
// extension from the options costs more than a map lookup and every logged
// call walks the same few descriptors.
var secretCache sync.Map // protoreflect.FieldDescriptor -> bool

// isSecret reports whether fd carries (machina.driver.v1alpha1.secret) = true.
func isSecret(fd protoreflect.FieldDescriptor) bool {
	if v, ok := secretCache.Load(fd); ok {
		return v.(bool)
	}
	secret := false
	if opts := fd.Options(); opts != nil {
		if b, ok := proto.GetExtension(opts, driverv1alpha1.E_Secret).(bool); ok {
			secret = b
		}
	}
	secretCache.Store(fd, secret)
	return secret
}

// strippable remembers needsStripping per message descriptor: String asks
// for every message it renders, the SDK and the core for every logged call.
var strippable sync.Map // protoreflect.MessageDescriptor -> bool

// needsStripping reports whether a message of type md can hold anything
// stripMessage changes for String: a secret field, a JSON field, or a
// google.protobuf.Any (whose payload may be of any type), here or in a
// message type it contains.
func needsStripping(md protoreflect.MessageDescriptor) bool {
	if v, ok := strippable.Load(md); ok {
		return v.(bool)
	}
	needs := typeNeedsStripping(md, map[protoreflect.FullName]bool{})
	strippable.Store(md, needs)
	return needs
}

// typeNeedsStripping is needsStripping without the cache; seen holds the
// types being looked at, so that a type that contains itself ends.
func typeNeedsStripping(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if md.FullName() == anyFullName {
		return true
	}
	if seen[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if isSecret(fd) || jsonFields[fd.FullName()] {
			return true
		}
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		if fd.Message() != nil && typeNeedsStripping(fd.Message(), seen) {
			return true
		}
	}
	return false
}
