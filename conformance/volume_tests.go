package conformance

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// persistentVolume builds the request message for a fixture the way the
// core does: the spec as JSON plus the CSI driver and handle extracted.
func persistentVolume(name string, spec json.RawMessage) *driverv1alpha1.PersistentVolume {
	pv := &driverv1alpha1.PersistentVolume{Name: name, Spec: append([]byte(nil), spec...)}
	var parsed struct {
		CSI *struct {
			Driver       string `json:"driver"`
			VolumeHandle string `json:"volumeHandle"`
		} `json:"csi"`
	}
	if json.Unmarshal(spec, &parsed) == nil && parsed.CSI != nil {
		pv.CsiDriver, pv.CsiVolumeHandle = parsed.CSI.Driver, parsed.CSI.VolumeHandle
	}
	return pv
}

// sampleVolumes are volumes no driver can claim: a CSI volume of a driver in
// the reserved .invalid domain and an NFS share.
func (s *suite) sampleVolumes() []*driverv1alpha1.PersistentVolume {
	return []*driverv1alpha1.PersistentVolume{
		persistentVolume(s.name("pv-foreign-csi"), json.RawMessage(
			`{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"csi":{"driver":"disk.conformance.invalid","volumeHandle":"vol-`+s.runID+`"}}`)),
		persistentVolume(s.name("pv-nfs"), json.RawMessage(
			`{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteMany"],"nfs":{"server":"nfs.conformance.invalid","path":"/export"}}`)),
	}
}

func (s *suite) fixtureVolumes() []*driverv1alpha1.PersistentVolume {
	var out []*driverv1alpha1.PersistentVolume
	for _, f := range s.cfg.Volumes {
		out = append(out, persistentVolume(f.Name, f.Spec))
	}
	return out
}

// testVolumeFixtures sends every configured fixture in one call and checks
// the mapping of each (§6.6.3).
func testVolumeFixtures(s *suite, t T) {
	if len(s.cfg.Volumes) == 0 {
		t.Skipf("no volume fixtures configured (Config.Volumes, --volumes)")
	}
	resp, err := s.getVolumeIDs(t, &driverv1alpha1.GetVolumeIDsRequest{Volumes: s.fixtureVolumes()})
	if err != nil {
		ruleVolumeMapping.fatalf(t, "GetVolumeIDs answered %s, want OK", describe(err))
	}
	got := map[string][]string{}
	for _, v := range resp.GetVolumeIds() {
		got[v.GetPersistentVolumeName()] = append(got[v.GetPersistentVolumeName()], v.GetVolumeId())
	}
	for _, f := range s.cfg.Volumes {
		ids := got[f.Name]
		switch {
		case f.NotMine && len(ids) > 0:
			ruleVolumeMapping.errorf(t, "volume %s is not the driver's, but GetVolumeIDs mapped it to %v", f.Name, ids)
		case f.NotMine:
		case len(ids) == 0:
			ruleVolumeMapping.errorf(t, "volume %s was left out, want volume ID %q", f.Name, f.VolumeID)
		case len(ids) > 1 || ids[0] != f.VolumeID:
			ruleVolumeMapping.errorf(t, "volume %s was mapped to %v, want [%s]", f.Name, ids, f.VolumeID)
		}
	}
}

// testVolumeResponseShape checks that GetVolumeIDs answers only for the
// volumes of the request, at most once each, with a volume ID (§6.6.2).
func testVolumeResponseShape(s *suite, t T) {
	vols := append(s.fixtureVolumes(), s.sampleVolumes()...)
	resp, err := s.getVolumeIDs(t, &driverv1alpha1.GetVolumeIDsRequest{Volumes: vols})
	if err != nil {
		ruleVolumeResponse.fatalf(t, "GetVolumeIDs of %d volumes answered %s, want OK", len(vols), describe(err))
	}
	requested := map[string]bool{}
	for _, v := range vols {
		requested[v.GetName()] = true
	}
	seen := map[string]int{}
	for _, v := range resp.GetVolumeIds() {
		name := v.GetPersistentVolumeName()
		seen[name]++
		switch {
		case !requested[name]:
			ruleVolumeResponse.errorf(t, "GetVolumeIDs answered for %q, which is not in the request", name)
		case v.GetVolumeId() == "":
			ruleVolumeResponse.errorf(t, "GetVolumeIDs answered an empty volume_id for %s", name)
		case len(v.GetVolumeId()) > maxVolumeIDLen:
			ruleVolumeResponse.errorf(t, "GetVolumeIDs answered a volume_id of %d bytes for %s", len(v.GetVolumeId()), name)
		}
	}
	var dups []string
	for name, n := range seen {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s (%d times)", name, n))
		}
	}
	sort.Strings(dups)
	if len(dups) > 0 {
		ruleVolumeResponse.errorf(t, "GetVolumeIDs answered more than once for %s", strings.Join(dups, ", "))
	}
	for _, v := range s.sampleVolumes() {
		if seen[v.GetName()] > 0 {
			ruleVolumeMapping.errorf(t, "GetVolumeIDs mapped %s, a volume of no provider (%s)", v.GetName(), strings.TrimSpace(string(v.GetSpec())))
		}
	}
	s.checkDuplicateVolumeNames(t, vols[0])
}

// checkDuplicateVolumeNames sends one volume twice. The core never does,
// and a driver may refuse it (INVALID_ARGUMENT naming volumes[1].name) or
// answer at most one entry for the name, since the answer identifies
// volumes by name (§6.6.4).
func (s *suite) checkDuplicateVolumeNames(t T, v *driverv1alpha1.PersistentVolume) {
	t.Helper()
	resp, err := s.getVolumeIDs(t, &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{v, v}})
	switch codeOf(err) {
	case codes.OK:
		n := 0
		for _, id := range resp.GetVolumeIds() {
			if id.GetPersistentVolumeName() == v.GetName() {
				n++
			}
		}
		if n > 1 {
			ruleVolumeResponse.errorf(t, "GetVolumeIDs of the volume %s sent twice answered %d entries for it, want at most one", v.GetName(), n)
		}
	case codes.InvalidArgument:
		expectInvalidArgument(t, "GetVolumeIDs of the volume "+v.GetName()+" sent twice", err, "volumes[1].name")
	default:
		ruleVolumeResponse.errorf(t, "GetVolumeIDs of the volume %s sent twice answered %s, want OK or INVALID_ARGUMENT", v.GetName(), describe(err))
	}
}

// testVolumeInvalidArguments sends GetVolumeIDs requests that break its
// REQUIRED fields (§4.1, §6.6.4). The broken volume follows a valid one, so
// that the message must name the right index.
func testVolumeInvalidArguments(s *suite, t T) {
	valid := s.sampleVolumes()[0]
	cases := []struct {
		name, field string
		broken      *driverv1alpha1.PersistentVolume // nil: no volumes at all
	}{
		{"volumes_missing", "volumes", nil},
		{"volumes[1].name_missing", "volumes[1].name", &driverv1alpha1.PersistentVolume{Spec: valid.GetSpec()}},
		{"volumes[1].spec_missing", "volumes[1].spec", &driverv1alpha1.PersistentVolume{Name: s.name("pv-no-spec")}},
		{"volumes[1].spec_not_json", "volumes[1].spec", &driverv1alpha1.PersistentVolume{Name: s.name("pv-bad-spec"), Spec: []byte("{not json")}},
		// JSON, but no PersistentVolumeSpec: malformed as well (§6.6.4).
		{"volumes[1].spec_an_array", "volumes[1].spec", &driverv1alpha1.PersistentVolume{Name: s.name("pv-array-spec"), Spec: []byte(`[{"csi":{}}]`)}},
		{"volumes[1].spec_a_string", "volumes[1].spec", &driverv1alpha1.PersistentVolume{Name: s.name("pv-string-spec"), Spec: []byte(`"hostPath"`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t T) {
			req := &driverv1alpha1.GetVolumeIDsRequest{}
			if c.broken != nil {
				req.Volumes = []*driverv1alpha1.PersistentVolume{valid, c.broken}
			}
			_, err := s.getVolumeIDs(t, req)
			expectInvalidArgument(t, "GetVolumeIDs with "+strings.ReplaceAll(c.name, "_", " "), err, c.field)
		})
	}
}
