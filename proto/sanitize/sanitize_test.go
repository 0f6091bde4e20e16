package sanitize

import (
	"strings"
	"testing"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
)

// driverFiles are the Driver API's file descriptors; the test covers every
// message declared in them, so a message added later is covered as well.
var driverFiles = []protoreflect.FileDescriptor{
	driverv1alpha1.File_machina_driver_v1alpha1_identity_proto,
	driverv1alpha1.File_machina_driver_v1alpha1_machine_proto,
	driverv1alpha1.File_machina_driver_v1alpha1_options_proto,
}

func allMessages(descs protoreflect.MessageDescriptors) []protoreflect.MessageDescriptor {
	var out []protoreflect.MessageDescriptor
	for i := 0; i < descs.Len(); i++ {
		md := descs.Get(i)
		if md.IsMapEntry() {
			continue
		}
		out = append(out, md)
		out = append(out, allMessages(md.Messages())...)
	}
	return out
}

func TestEveryDriverAPIMessage(t *testing.T) {
	var secretFields []protoreflect.FullName
	count := 0
	for _, file := range driverFiles {
		for _, md := range allMessages(file.Messages()) {
			t.Run(string(md.FullName()), func(t *testing.T) {
				mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName())
				require.NoError(t, err)
				f := checkSanitized(t, mt.New().Interface())
				secretFields = append(secretFields, f.secretFields...)
			})
			count++
		}
	}
	// Guard against a vacuous run: the known messages and secret fields
	// must have been visited.
	assert.GreaterOrEqual(t, count, 20)
	for _, want := range []protoreflect.FullName{
		"machina.driver.v1alpha1.CreateMachineRequest.secrets",
		"machina.driver.v1alpha1.CreateMachineRequest.user_data",
		"machina.driver.v1alpha1.InitializeMachineRequest.secrets",
		"machina.driver.v1alpha1.DeleteMachineRequest.secrets",
		"machina.driver.v1alpha1.GetMachineStatusRequest.secrets",
		"machina.driver.v1alpha1.ListMachinesRequest.secrets",
	} {
		assert.Contains(t, secretFields, want)
	}
}

func TestCreateMachineRequestConcrete(t *testing.T) {
	req := &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: "m-1", Namespace: "ns"},
		MachineClass: &driverv1alpha1.MachineClass{Name: "c", ProviderSpec: []byte(`{"a":1}`)},
		Secrets:      map[string][]byte{"accessKey": []byte(canary), "empty": {}},
		UserData:     []byte("#cloud-config " + canary),
	}
	got := Message(req).(*driverv1alpha1.CreateMachineRequest)
	assert.Equal(t, map[string][]byte{"accessKey": []byte(Redacted), "empty": []byte(Redacted)}, got.GetSecrets())
	assert.Equal(t, []byte(Redacted), got.GetUserData())
	assert.Equal(t, "m-1", got.GetMachine().GetName())
	assert.Equal(t, []byte(canary), req.GetSecrets()["accessKey"], "input must keep its secret")

	s := String(req)
	assertNoCanary(t, s)
	assert.Contains(t, s, `"m-1"`)
	assert.Contains(t, s, "accessKey")
}

func TestUnsetSecretStaysUnset(t *testing.T) {
	req := &driverv1alpha1.GetMachineStatusRequest{Machine: &driverv1alpha1.Machine{Name: "m"}}
	got := Message(req).(*driverv1alpha1.GetMachineStatusRequest)
	assert.Nil(t, got.GetSecrets())
	assert.NotContains(t, String(req), "secrets")
}

func TestNilAndNonMessages(t *testing.T) {
	assert.Nil(t, Message(nil))
	var typedNil *driverv1alpha1.CreateMachineRequest
	assert.Equal(t, "<nil>", String(typedNil))
	assert.Equal(t, "<nil>", String(nil))
	assert.Equal(t, "42", String(42))
	assert.Equal(t, "plain", String("plain"))

	list := []*driverv1alpha1.CreateMachineRequest{
		{UserData: []byte(canary), Machine: &driverv1alpha1.Machine{Name: "first"}},
		nil,
	}
	out := String(list)
	assertNoCanary(t, out)
	assert.Contains(t, out, "first")
	assert.True(t, strings.HasPrefix(out, "["))

	generic := []proto.Message{&driverv1alpha1.ListMachinesRequest{Secrets: map[string][]byte{"k": []byte(canary)}}}
	assertNoCanary(t, String(generic))
}

// testFile is a proto file built at test time. It has the shapes the Driver
// API does not use (yet): secrets nested in messages, lists and maps of
// messages, secret lists, oneofs, a secret message field, secret
// non-string scalars and Any. Building it dynamically shows that Message
// works on any message, not only on generated Driver API types.
const testFile = `
name: "machina/sanitizetest/test.proto"
package: "machina.sanitizetest"
dependency: "machina/driver/v1alpha1/options.proto"
dependency: "google/protobuf/any.proto"
syntax: "proto3"
message_type {
  name: "Inner"
  field { name: "token" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "token"
          options { [machina.driver.v1alpha1.secret]: true } }
  field { name: "note" number: 2 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "note" }
  field { name: "count" number: 3 label: LABEL_OPTIONAL type: TYPE_INT64 json_name: "count"
          options { [machina.driver.v1alpha1.secret]: true } }
  field { name: "key" number: 4 label: LABEL_OPTIONAL type: TYPE_BYTES json_name: "key"
          options { [machina.driver.v1alpha1.secret]: true } }
}
message_type {
  name: "Outer"
  field { name: "inner" number: 1 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".machina.sanitizetest.Inner" json_name: "inner" }
  field { name: "inners" number: 2 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".machina.sanitizetest.Inner" json_name: "inners" }
  field { name: "inner_map" number: 3 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".machina.sanitizetest.Outer.InnerMapEntry" json_name: "innerMap" }
  field { name: "tokens" number: 4 label: LABEL_REPEATED type: TYPE_STRING json_name: "tokens"
          options { [machina.driver.v1alpha1.secret]: true } }
  field { name: "secret_choice" number: 5 label: LABEL_OPTIONAL type: TYPE_STRING oneof_index: 0 json_name: "secretChoice"
          options { [machina.driver.v1alpha1.secret]: true } }
  field { name: "plain_choice" number: 6 label: LABEL_OPTIONAL type: TYPE_STRING oneof_index: 0 json_name: "plainChoice" }
  field { name: "inner_choice" number: 7 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".machina.sanitizetest.Inner" oneof_index: 0 json_name: "innerChoice" }
  field { name: "secret_inner" number: 8 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".machina.sanitizetest.Inner" json_name: "secretInner"
          options { [machina.driver.v1alpha1.secret]: true } }
  field { name: "secret_numbers" number: 9 label: LABEL_REPEATED type: TYPE_INT32 json_name: "secretNumbers"
          options { [machina.driver.v1alpha1.secret]: true } }
  field { name: "secret_flag" number: 10 label: LABEL_OPTIONAL type: TYPE_BOOL json_name: "secretFlag"
          options { [machina.driver.v1alpha1.secret]: true } }
  field { name: "secret_map_of_inner" number: 11 label: LABEL_REPEATED type: TYPE_MESSAGE type_name: ".machina.sanitizetest.Outer.SecretMapOfInnerEntry" json_name: "secretMapOfInner"
          options { [machina.driver.v1alpha1.secret]: true } }
  field { name: "any" number: 12 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".google.protobuf.Any" json_name: "any" }
  field { name: "plain" number: 13 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "plain" }
  nested_type {
    name: "InnerMapEntry"
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "key" }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".machina.sanitizetest.Inner" json_name: "value" }
    options { map_entry: true }
  }
  nested_type {
    name: "SecretMapOfInnerEntry"
    field { name: "key" number: 1 label: LABEL_OPTIONAL type: TYPE_STRING json_name: "key" }
    field { name: "value" number: 2 label: LABEL_OPTIONAL type: TYPE_MESSAGE type_name: ".machina.sanitizetest.Inner" json_name: "value" }
    options { map_entry: true }
  }
  oneof_decl { name: "choice" }
}
`

func outerType(t *testing.T) protoreflect.MessageType {
	t.Helper()
	fdp := &descriptorpb.FileDescriptorProto{}
	require.NoError(t, prototext.Unmarshal([]byte(testFile), fdp))
	fd, err := protodesc.NewFile(fdp, protoregistry.GlobalFiles)
	require.NoError(t, err)
	return dynamicpb.NewMessageType(fd.Messages().ByName("Outer"))
}

func TestDynamicMessageAllShapes(t *testing.T) {
	mt := outerType(t)
	m := mt.New().Interface()
	f := checkSanitized(t, m)
	for _, name := range []protoreflect.FullName{
		"machina.sanitizetest.Inner.token", "machina.sanitizetest.Inner.count", "machina.sanitizetest.Inner.key",
		"machina.sanitizetest.Outer.tokens", "machina.sanitizetest.Outer.secret_choice",
		"machina.sanitizetest.Outer.secret_inner", "machina.sanitizetest.Outer.secret_numbers",
		"machina.sanitizetest.Outer.secret_flag", "machina.sanitizetest.Outer.secret_map_of_inner",
	} {
		assert.Contains(t, f.secretFields, name, "every secret shape of the test file was filled")
	}

	// Spot checks on top of the generic ones.
	got := Message(m).ProtoReflect()
	fields := mt.Descriptor().Fields()
	secretInner := got.Get(fields.ByName("secret_inner")).Message()
	innerFields := secretInner.Descriptor().Fields()
	assert.Equal(t, Redacted, secretInner.Get(innerFields.ByName("note")).String(),
		"non-secret fields inside a secret message are redacted too")
	assert.False(t, secretInner.Has(innerFields.ByName("count")), "secret numbers are cleared")
	assert.False(t, got.Has(fields.ByName("secret_numbers")))
	assert.False(t, got.Has(fields.ByName("secret_flag")))
	assert.Equal(t, 2, got.Get(fields.ByName("tokens")).List().Len(), "list length stays visible")
}

func TestDynamicOneofMembers(t *testing.T) {
	mt := outerType(t)
	fields := mt.Descriptor().Fields()

	t.Run("secret member", func(t *testing.T) {
		m := mt.New()
		m.Set(fields.ByName("secret_choice"), protoreflect.ValueOfString(canary))
		assertNoCanary(t, String(m.Interface()))
		assert.Contains(t, String(m.Interface()), Redacted)
	})
	t.Run("plain member", func(t *testing.T) {
		m := mt.New()
		m.Set(fields.ByName("plain_choice"), protoreflect.ValueOfString("shown"))
		assert.Contains(t, String(m.Interface()), "shown")
	})
	t.Run("message member", func(t *testing.T) {
		m := mt.New()
		inner := m.Mutable(fields.ByName("inner_choice")).Message()
		innerFields := inner.Descriptor().Fields()
		inner.Set(innerFields.ByName("token"), protoreflect.ValueOfString(canary))
		inner.Set(innerFields.ByName("note"), protoreflect.ValueOfString("note-shown"))
		out := String(m.Interface())
		assertNoCanary(t, out)
		assert.Contains(t, out, "note-shown")
	})
}

func TestAnyPayloadIsSanitized(t *testing.T) {
	mt := outerType(t)
	fields := mt.Descriptor().Fields()

	packed, err := anypb.New(&driverv1alpha1.CreateMachineRequest{
		Machine:  &driverv1alpha1.Machine{Name: "in-any"},
		UserData: []byte(canary),
	})
	require.NoError(t, err)
	m := mt.New()
	m.Set(fields.ByName("any"), protoreflect.ValueOfMessage(packed.ProtoReflect()))

	out := String(m.Interface())
	assertNoCanary(t, out)
	assert.Contains(t, out, "in-any")

	// A payload of an unknown type cannot be inspected and is dropped.
	unknown := &anypb.Any{TypeUrl: "type.googleapis.com/example.Unknown", Value: []byte(canary)}
	m.Set(fields.ByName("any"), protoreflect.ValueOfMessage(unknown.ProtoReflect()))
	got := Message(m.Interface()).ProtoReflect().Get(fields.ByName("any")).Message()
	anyFields := got.Descriptor().Fields()
	assert.False(t, got.Has(anyFields.ByName("value")))
	assert.Equal(t, unknown.GetTypeUrl(), got.Get(anyFields.ByName("type_url")).String())
	out = String(m.Interface())
	assertNoCanary(t, out)
	assert.Contains(t, out, "example.Unknown", "the rendering falls back to text format and keeps the type URL")
}

func TestUnknownFieldsAreDropped(t *testing.T) {
	// Field 99 does not exist in Machine: a newer peer's field, possibly
	// secret, arrives as unknown bytes.
	raw := []byte{0x9a, 0x06, byte(len(canary))} // tag (99<<3|2) as varint, then length
	raw = append(raw, canary...)
	m := &driverv1alpha1.Machine{Name: "n"}
	m.ProtoReflect().SetUnknown(raw)

	got := Message(m)
	assert.Empty(t, got.ProtoReflect().GetUnknown())
	assert.NotEmpty(t, m.ProtoReflect().GetUnknown(), "input keeps its unknown fields")
	b, err := proto.Marshal(got)
	require.NoError(t, err)
	assert.NotContains(t, string(b), canary)
}
