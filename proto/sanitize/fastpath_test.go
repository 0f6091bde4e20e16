package sanitize

import (
	"fmt"
	"strings"
	"testing"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/stretchr/testify/assert"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// TestNeedsStripping: String marshals messages of the types answered false
// without copying and stripping them, so a wrong false would leak.
func TestNeedsStripping(t *testing.T) {
	for _, tc := range []struct {
		msg  proto.Message
		want bool
	}{
		{&driverv1alpha1.CreateMachineRequest{}, true},      // secrets, user_data
		{&driverv1alpha1.GetMachineStatusRequest{}, true},   // secrets
		{&driverv1alpha1.MachineClass{}, true},              // provider_spec is rendered as JSON
		{&driverv1alpha1.UpdateMachineRequest{}, true},      // classes and secrets
		{&anypb.Any{}, true},                                // a payload of any type
		{&driverv1alpha1.CreateMachineResponse{}, false},    // provider ID, node name
		{&driverv1alpha1.GetMachineStatusResponse{}, false}, // the same and flags
		{&driverv1alpha1.Machine{}, false},
	} {
		md := tc.msg.ProtoReflect().Descriptor()
		assert.Equal(t, tc.want, needsStripping(md), md.FullName())
	}
}

// TestStringOfCleanTypeDropsUnknownFields: a message of a type without
// secrets is rendered as it is, and its unknown fields (a newer peer's,
// possibly secret) still do not show.
func TestStringOfCleanTypeDropsUnknownFields(t *testing.T) {
	raw := []byte{0x9a, 0x06, byte(len(canary))} // field 99, length-delimited
	raw = append(raw, canary...)
	m := &driverv1alpha1.CreateMachineResponse{ProviderId: "p:///1"}
	m.ProtoReflect().SetUnknown(raw)
	s := String(m)
	assert.Contains(t, s, "p:///1")
	assert.NotContains(t, s, canary)
}

// TestRenderedJSONCache: a cached rendering is the rendering, and the cache
// stays within its bounds.
func TestRenderedJSONCache(t *testing.T) {
	spec := []byte(`{"image":"debian","password":"` + canary + `"}`)
	first := renderedJSON.get(spec)
	assert.Equal(t, renderJSONField(spec), first)
	assert.NotContains(t, first, canary)
	assert.Equal(t, first, renderedJSON.get(spec), "from the cache")

	for i := range 3 * jsonCacheEntries {
		renderedJSON.get(fmt.Appendf(nil, `{"n":%d}`, i))
	}
	big := []byte(`{"x":"` + strings.Repeat("a", jsonCacheMaxBytes) + `"}`)
	assert.Equal(t, renderJSONField(big), renderedJSON.get(big))
	renderedJSON.mu.Lock()
	defer renderedJSON.mu.Unlock()
	assert.LessOrEqual(t, len(renderedJSON.m), jsonCacheEntries)
	assert.NotContains(t, renderedJSON.m, string(big), "a large value is not kept")
}
