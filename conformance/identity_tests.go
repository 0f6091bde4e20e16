package conformance

import (
	"regexp"

	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

var (
	// pluginName is the rule for GetPluginInfo.name (§5). Unlike
	// csi-sanity's pattern it accepts names that start or end with a digit,
	// as the rule says, and nothing outside [a-z0-9.-].
	pluginName = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$`)
	// semver is semantic versioning 2.0.0 (semver.org's pattern) with an
	// optional leading "v".
	semver = regexp.MustCompile(`^v?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
		`(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
		`(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)
)

// testPluginName checks GetPluginInfo.name (§5).
func testPluginName(s *suite, t T) {
	resp, err := s.getPluginInfo(t)
	if !expectOK(t, ruleIdentityOK, "GetPluginInfo", err) {
		return
	}
	name := resp.GetName()
	switch {
	case name == "":
		rulePluginName.errorf(t, "the name is empty")
	case len(name) > maxPluginNameLen:
		rulePluginName.errorf(t, "the name %q has %d characters", name, len(name))
	case !pluginName.MatchString(name):
		rulePluginName.errorf(t, "the name %q breaks the pattern %s", name, pluginName)
	}
}

// testVendorVersion checks GetPluginInfo.vendor_version (§5).
func testVendorVersion(s *suite, t T) {
	resp, err := s.getPluginInfo(t)
	if !expectOK(t, ruleIdentityOK, "GetPluginInfo", err) {
		return
	}
	if v := resp.GetVendorVersion(); !semver.MatchString(v) {
		ruleVendorVersion.errorf(t, "the vendor_version %q is not a semantic version", v)
	}
}

// testManifest checks the size limits of GetPluginInfo.manifest (§5).
func testManifest(s *suite, t T) {
	resp, err := s.getPluginInfo(t)
	if !expectOK(t, ruleIdentityOK, "GetPluginInfo", err) {
		return
	}
	m := resp.GetManifest()
	if len(m) > maxManifestEntries {
		ruleManifest.errorf(t, "the manifest has %d entries", len(m))
	}
	for k, v := range m {
		if len(k) > maxManifestLen || len(v) > maxManifestLen {
			ruleManifest.errorf(t, "the manifest entry %.40q has a key of %d and a value of %d bytes", k, len(k), len(v))
		}
	}
}

// knownCapabilities are the Capability.Type values of this API version.
var knownCapabilities = map[driverv1alpha1.Capability_Type]bool{
	driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE: true,
	driverv1alpha1.Capability_TYPE_LIST_MACHINES:      true,
	driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS:     true,
}

// testKnownCapabilities checks that every advertised capability is a value
// this API version defines (§3, §5).
func testKnownCapabilities(s *suite, t T) {
	resp, err := s.getPluginCapabilities(t)
	if !expectOK(t, ruleIdentityOK, "GetPluginCapabilities", err) {
		return
	}
	for i, c := range resp.GetCapabilities() {
		if !knownCapabilities[c.GetType()] {
			ruleKnownCapabilities.errorf(t, "capabilities[%d] is %s (%d), not a capability of machina.driver.v1alpha1", i, c.GetType(), int32(c.GetType()))
		}
	}
}

// testProbe checks that Probe answers OK and, when the driver says it is
// not ready, that it becomes ready (§5). The preflight has already waited
// for readiness; this checks the answer once more.
func testProbe(s *suite, t T) {
	resp, err := s.probe(t)
	if !expectOK(t, ruleProbe, "Probe", err) {
		return
	}
	if r := resp.GetReady(); r != nil && !r.GetValue() {
		ruleProbe.errorf(t, "Probe answered ready=false after the driver had reported ready")
	}
}

// optionalRPC is one OPTIONAL RPC and how to call it with a well-formed
// request.
type optionalRPC struct {
	capability driverv1alpha1.Capability_Type
	rpc        string
	call       func(s *suite, t T) error
}

var optionalRPCs = []optionalRPC{
	{driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE, "InitializeMachine", func(s *suite, t T) error {
		_, err := s.initializeMachine(t, s.initializeRequest(&vm{name: s.name("never-created"), providerID: "conformance:///" + randomID(12)}))
		return err
	}},
	{driverv1alpha1.Capability_TYPE_LIST_MACHINES, "ListMachines", func(s *suite, t T) error {
		_, err := s.listMachines(t, s.listRequest())
		return err
	}},
	{driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS, "GetVolumeIDs", func(s *suite, t T) error {
		_, err := s.getVolumeIDs(t, &driverv1alpha1.GetVolumeIDsRequest{Volumes: s.sampleVolumes()})
		return err
	}},
}

// testUnadvertisedUnimplemented calls every OPTIONAL RPC whose capability
// the driver does not advertise, with a well-formed request (§3).
func testUnadvertisedUnimplemented(s *suite, t T) {
	ran := false
	for _, o := range optionalRPCs {
		if s.caps[o.capability] {
			continue
		}
		ran = true
		expectCode(t, ruleUnadvertisedUnimpl, o.rpc+" (not advertised: "+o.capability.String()+")", o.call(s, t), codes.Unimplemented)
	}
	if !ran {
		t.Skipf("the driver advertises every optional capability")
	}
}

// testAdvertisedImplemented calls every OPTIONAL RPC whose capability the
// driver advertises; any answer but UNIMPLEMENTED passes here, the RPC's own
// tests judge the rest (§3).
func testAdvertisedImplemented(s *suite, t T) {
	ran := false
	for _, o := range optionalRPCs {
		if !s.caps[o.capability] {
			continue
		}
		ran = true
		if err := o.call(s, t); codeOf(err) == codes.Unimplemented {
			ruleAdvertisedImpl.errorf(t, "%s answered %s although the driver advertises %s", o.rpc, describe(err), o.capability)
		}
	}
	if !ran {
		t.Skipf("the driver advertises no optional capability")
	}
}
