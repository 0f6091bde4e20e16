package conformance

import (
	"fmt"
	"maps"
	"regexp"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

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
	switch v := resp.GetVendorVersion(); {
	case len(v) > maxVersionLen:
		ruleVendorVersion.errorf(t, "the vendor_version has %d bytes", len(v))
	case !semver.MatchString(v):
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

// testProviders checks GetPluginInfo.providers (§5.1.2): a core routes
// classes by these values and refuses a driver that breaks the form.
func testProviders(s *suite, t T) {
	resp, err := s.getPluginInfo(t)
	if !expectOK(t, ruleIdentityOK, "GetPluginInfo", err) {
		return
	}
	seen := map[string]bool{}
	for i, p := range resp.GetProviders() {
		switch {
		case p == "" || len(p) > maxPluginNameLen:
			ruleProviders.errorf(t, "providers[%d] %.70q has %d bytes", i, p, len(p))
		case seen[p]:
			ruleProviders.errorf(t, "providers[%d] %q is listed twice", i, p)
		}
		seen[p] = true
	}
}

// knownCapabilities are the Capability.Type values of this API version.
var knownCapabilities = map[driverv1alpha1.Capability_Type]bool{
	driverv1alpha1.Capability_TYPE_INITIALIZE_MACHINE: true,
	driverv1alpha1.Capability_TYPE_LIST_MACHINES:      true,
	driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS:     true,
}

// testKnownCapabilities checks that no advertised capability is
// TYPE_UNSPECIFIED (§3.4). A value this suite does not know is logged, not
// failed: receivers ignore unknown values (§3.2, §3.4), and a driver built
// from a later revision of v1alpha1 may advertise one this suite was built
// without.
func testKnownCapabilities(s *suite, t T) {
	resp, err := s.getPluginCapabilities(t)
	if !expectOK(t, ruleIdentityOK, "GetPluginCapabilities", err) {
		return
	}
	for i, c := range resp.GetCapabilities() {
		switch {
		case c.GetType() == driverv1alpha1.Capability_TYPE_UNSPECIFIED:
			ruleKnownCapabilities.errorf(t, "capabilities[%d] is TYPE_UNSPECIFIED, which a driver never sends", i)
		case !knownCapabilities[c.GetType()]:
			t.Logf("capabilities[%d] is %d, a Capability.Type this suite does not know; ignored, as the core ignores it (§3.4)", i, int32(c.GetType()))
		}
	}
}

// probeLimit is how long Probe may take (§5.3): the core's deadline.
const probeLimit = 5 * time.Second

// testProbe checks that Probe answers OK within 5 seconds (§5.3), several
// times, as the core's readiness check calls it. The preflight has already
// waited until the driver reported ready.
func testProbe(s *suite, t T) {
	for i := 1; i <= s.cfg.IdempotentCount; i++ {
		start := time.Now()
		resp, err := s.probe(t)
		elapsed := time.Since(start)
		if !expectOK(t, ruleProbe, fmt.Sprintf("Probe #%d", i), err) {
			return
		}
		if elapsed > probeLimit {
			ruleProbe.errorf(t, "Probe #%d took %v", i, elapsed.Round(time.Millisecond))
		}
		if r := resp.GetReady(); r != nil && !r.GetValue() {
			t.Logf("Probe #%d answered ready=false after the driver had reported ready", i)
		}
	}
}

// testStableIdentity asks for the driver's identity and capabilities again
// and compares them with the answers at the start of the run (§2.7).
func testStableIdentity(s *suite, t T) {
	for i := 1; i <= s.cfg.IdempotentCount; i++ {
		info, err := s.getPluginInfo(t)
		if !expectOK(t, ruleIdentityOK, "GetPluginInfo", err) {
			return
		}
		if !proto.Equal(info, s.info) {
			ruleStableAnswer.errorf(t, "GetPluginInfo answered %v, at the start of the run %v", info, s.info)
		}
		caps, err := s.getPluginCapabilities(t)
		if !expectOK(t, ruleIdentityOK, "GetPluginCapabilities", err) {
			return
		}
		now := map[driverv1alpha1.Capability_Type]bool{}
		for _, c := range caps.GetCapabilities() {
			now[c.GetType()] = true
		}
		if !maps.Equal(now, s.caps) {
			ruleStableCaps.errorf(t, "GetPluginCapabilities answered %v, at the start of the run %v", capNames(now), capNames(s.caps))
		}
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
	{driverv1alpha1.Capability_TYPE_UPDATE_MACHINE, "UpdateMachine", func(s *suite, t T) error {
		_, err := s.updateMachine(t, s.updateRequest(&vm{name: s.name("never-created"), providerID: "conformance:///" + randomID(12)}, s.cfg.MachineClass.ProviderSpec))
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
