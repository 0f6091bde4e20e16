package conformance

import (
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// longName extends base with DNS labels to exactly n characters, a valid
// DNS-1123 subdomain (labels of at most 63 characters).
func longName(base string, n int) string {
	if (n-len(base))%64 == 1 {
		// ".x" is the shortest label to add: never leave one character.
		base += "x"
	}
	var b strings.Builder
	b.WriteString(base)
	for b.Len() < n {
		label := min(63, n-b.Len()-1)
		b.WriteString("." + strings.Repeat("a", label))
	}
	return b.String()
}

// testLongestName creates, finds and deletes a machine whose name has the
// greatest length a Machine name can have, 253 characters (§4.3): a driver
// that derives provider names from it must map it without losing it.
func testLongestName(s *suite, t T) {
	name := longName(s.name("longest"), maxNameLen)
	v := s.track(t, name)
	resp, err := s.createMachine(t, s.createRequest(name))
	if err != nil {
		ruleLongestName.fatalf(t, "CreateMachine of a machine with a name of %d characters (%s) answered %s, want OK", len(name), name, describe(err))
	}
	s.checkCreateResponse(t, name, resp)
	s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
	st, err := s.getMachineStatus(t, s.statusRequest(name, ""))
	switch {
	case err != nil:
		ruleLongestName.errorf(t, "GetMachineStatus by the name of %d characters answered %s, want OK", len(name), describe(err))
	case st.GetProviderId() != v.providerID:
		ruleLongestName.errorf(t, "GetMachineStatus by the name of %d characters returned provider ID %q, CreateMachine returned %q", len(name), st.GetProviderId(), v.providerID)
	}
	// A name shortened to fit the provider must not collide: the name
	// without its last character is another machine.
	other := name[:len(name)-1]
	_, err = s.getMachineStatus(t, s.statusRequest(other, ""))
	expectCode(t, ruleLongestName, fmt.Sprintf("GetMachineStatus of %s (the long name without its last character, never created)", other), err, codes.NotFound)
	if _, err := s.deleteMachine(t, s.deleteRequest(&vm{name: name})); !expectOK(t, ruleLongestName, "DeleteMachine by the name of 253 characters", err) {
		return
	}
	s.markDeleted(v)
	s.checkGone(t, ruleLongestName, v)
}

// maxRequest is the size of the largest request the core sends (§2.5),
// less room for gRPC's framing.
const maxRequest = 4<<20 - 16<<10

// testLargestRequest sends GetVolumeIDs with the most volumes a request may
// carry, 1024 (§4.2), padded to almost 4 MiB (§2.5): the core splits larger
// sets to exactly these limits, so a driver must take them.
func testLargestRequest(s *suite, t T) {
	const n = 1024
	req := &driverv1alpha1.GetVolumeIDsRequest{}
	pad := 0
	build := func() {
		req.Volumes = req.Volumes[:0]
		for i := range n {
			spec := fmt.Sprintf(`{"nfs":{"server":"nfs.conformance.example","path":"/exports/%04d/%s"}}`, i, strings.Repeat("p", pad))
			req.Volumes = append(req.Volumes, &driverv1alpha1.PersistentVolume{Name: fmt.Sprintf("pv-largest-%04d", i), Spec: []byte(spec)})
		}
	}
	build()
	pad = (maxRequest - proto.Size(req)) / n
	build()
	resp, err := s.getVolumeIDs(t, req)
	if err != nil {
		ruleLargestRequest.errorf(t, "GetVolumeIDs with %d volumes, %d bytes in all, answered %s, want OK", n, proto.Size(req), describe(err))
		return
	}
	names := map[string]bool{}
	for _, pv := range req.Volumes {
		names[pv.GetName()] = true
	}
	for _, id := range resp.GetVolumeIds() {
		if !names[id.GetPersistentVolumeName()] {
			ruleVolumeResponse.errorf(t, "GetVolumeIDs answered for %q, which the request did not have", id.GetPersistentVolumeName())
		}
	}
}
