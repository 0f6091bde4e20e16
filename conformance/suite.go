package conformance

import (
	"crypto/rand"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// RunLabel is the Machine label the suite sets on every machine it sends,
// with the run ID as value, so that a driver's logs can be tied to a run.
const RunLabel = "conformance.machina.io/run"

// RunT runs the whole suite against cfg.Endpoint as subtests of t. Run wraps
// it for *testing.T; Runner uses it with its own T.
//
// With cfg.Launch set, RunT first starts the driver itself (launcher mode)
// and runs the suite against it, adding the Launcher checks.
func RunT(t T, cfg Config) {
	t.Helper()
	var l *launcher
	if cfg.Launch != nil {
		if err := cfg.Launch.validate(); err != nil {
			t.Fatalf("conformance: unusable Config: Launch: %v", err)
		}
		l, cfg.Endpoint = startLaunched(t, cfg)
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		t.Fatalf("conformance: unusable Config: %v", err)
	}
	s, err := newSuite(cfg)
	if err != nil {
		t.Fatalf("conformance: %v", err)
	}
	t.Cleanup(func() { _ = s.conn.Close() })
	s.launch = l
	s.preflight(t)
	// The last safety net: whatever a test left behind (a cleanup that
	// failed, a run interrupted) is deleted before the connection closes.
	t.Cleanup(func() { s.sweep(t) })
	for _, tc := range suiteTests() {
		t.Run(tc.Name, func(t T) {
			if tc.capability != driverv1alpha1.Capability_TYPE_UNSPECIFIED && !s.caps[tc.capability] {
				t.Skipf("the driver does not advertise %s", tc.capability)
			}
			if !strings.HasPrefix(tc.Name, "Launcher/") {
				s.sampleIdentity(t, tc.Name)
			}
			tc.run(s, t)
		})
	}
}

// suite is the state of one run.
type suite struct {
	cfg      Config
	conn     *grpc.ClientConn
	identity driverv1alpha1.IdentityServiceClient
	machines driverv1alpha1.MachineServiceClient

	runID  string
	prefix string // cfg.NamePrefix + runID + "-": every machine name starts with it
	canary string // the secret value that must never be echoed

	// launch is set in launcher mode (Config.Launch).
	launch *launcher

	info *driverv1alpha1.GetPluginInfoResponse
	caps map[driverv1alpha1.Capability_Type]bool

	mu           sync.Mutex
	vms          map[string]*vm  // every machine the suite may have created, by name
	echoReported map[string]bool // see checkCanary
	// listWaitSpent is set once a listing waited for a VM in vain (see
	// listOwnUntil).
	listWaitSpent bool

	// samples are the identity answers read before each check (see
	// sampleIdentity).
	samples []identitySample

	fixtureOnce sync.Once
	fixtureVM   *vm
	fixtureErr  string
}

// vm is what the suite knows about a machine it created.
type vm struct {
	name           string
	providerID     string
	nodeName       string
	lastKnownState string
	deleted        bool
	initialized    bool // InitializeMachine answered OK for it
}

func newSuite(cfg Config) (*suite, error) {
	conn, err := connect(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	runID := randomID(5)
	return &suite{
		cfg:      cfg,
		conn:     conn,
		identity: driverv1alpha1.NewIdentityServiceClient(conn),
		machines: driverv1alpha1.NewMachineServiceClient(conn),
		runID:    runID,
		prefix:   cfg.NamePrefix + runID + "-",
		canary:   "machina-canary-" + randomID(20),
		vms:      map[string]*vm{},

		echoReported: map[string]bool{},
	}, nil
}

// randomID returns n random characters of [a-z0-9].
func randomID(n int) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// driverRecorder is implemented by the Runner's T to put the driver's
// identity into the report.
type driverRecorder interface {
	setDriver(DriverInfo)
}

// preflight waits until the driver answers and is ready, and reads its
// identity and capabilities. It ends the suite when the driver cannot be
// used at all.
func (s *suite) preflight(t T) {
	t.Helper()
	deadline := time.Now().Add(s.cfg.Timeouts.Ready)
	var err error
	// The driver may still be starting (no socket yet): retry until Ready.
	for {
		s.info, err = s.getPluginInfo(t)
		if err == nil || codeOf(err) != codes.Unavailable || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	switch {
	case codeOf(err) == codes.Unimplemented:
		ruleVersionServed.fatalf(t, "GetPluginInfo answered UNIMPLEMENTED: the driver does not serve machina.driver.v1alpha1")
	case err != nil:
		ruleIdentityOK.fatalf(t, "cannot reach the driver at %s: GetPluginInfo answered %s", s.cfg.Endpoint, describe(err))
	}
	for {
		var resp *driverv1alpha1.ProbeResponse
		resp, err = s.probe(t)
		if err == nil && (resp.GetReady() == nil || resp.GetReady().GetValue()) {
			break
		}
		if time.Now().After(deadline) {
			if err == nil {
				// Probe answered in time, with ready=false: not the
				// 5-second rule, the readiness rule.
				ruleNotReady.fatalf(t, "the driver did not report ready within %v", s.cfg.Timeouts.Ready)
			}
			ruleProbe.fatalf(t, "Probe answered %s", describe(err))
		}
		time.Sleep(200 * time.Millisecond)
	}
	capsResp, err := s.getPluginCapabilities(t)
	if err != nil {
		ruleIdentityOK.fatalf(t, "GetPluginCapabilities answered %s", describe(err))
	}
	s.caps = map[driverv1alpha1.Capability_Type]bool{}
	for _, c := range capsResp.GetCapabilities() {
		s.caps[c.GetType()] = true
	}
	names := capNames(s.caps)
	t.Logf("driver %q version %q, capabilities [%s], machine names start with %q",
		s.info.GetName(), s.info.GetVendorVersion(), strings.Join(names, " "), s.prefix)
	if r, ok := t.(driverRecorder); ok {
		r.setDriver(DriverInfo{
			Name:         s.info.GetName(),
			Version:      s.info.GetVendorVersion(),
			Manifest:     s.info.GetManifest(),
			Capabilities: names,
		})
	}
}

// capNames returns the sorted names of a set of capabilities.
func capNames(caps map[driverv1alpha1.Capability_Type]bool) []string {
	names := make([]string, 0, len(caps))
	for c := range caps {
		names = append(names, c.String())
	}
	sort.Strings(names)
	return names
}

// name returns the machine name for a purpose, within the run's prefix.
func (s *suite) name(purpose string) string { return s.prefix + purpose }

// machine returns the Machine message for name.
func (s *suite) machine(name string) *driverv1alpha1.Machine {
	u := randomID(32)
	m := &driverv1alpha1.Machine{
		Name:      name,
		Namespace: s.cfg.Namespace,
		// A UUID-shaped UID, as Kubernetes sets.
		Uid:    fmt.Sprintf("%s-%s-%s-%s-%s", u[:8], u[8:12], u[12:16], u[16:20], u[20:32]),
		Labels: map[string]string{RunLabel: s.runID},
	}
	if s.cfg.NodeTemplate != nil {
		m.NodeTemplate = proto.Clone(s.cfg.NodeTemplate).(*driverv1alpha1.NodeTemplate)
	}
	return m
}

// class returns the configured MachineClass message.
func (s *suite) class() *driverv1alpha1.MachineClass {
	c := &driverv1alpha1.MachineClass{
		Name: s.cfg.MachineClass.Name,
		// A class is in the namespace of its Machines (§4.9).
		Namespace:    s.cfg.Namespace,
		Provider:     s.cfg.MachineClass.Provider,
		ProviderSpec: append([]byte(nil), s.cfg.MachineClass.ProviderSpec...),
	}
	if nt := s.cfg.MachineClass.NodeTemplate; nt != nil {
		c.NodeTemplate = proto.Clone(nt).(*driverv1alpha1.ClassNodeTemplate)
	}
	return c
}

// secrets returns the configured secrets plus the canary.
func (s *suite) secrets() map[string][]byte {
	out := make(map[string][]byte, len(s.cfg.Secrets)+1)
	for k, v := range s.cfg.Secrets {
		out[k] = append([]byte(nil), v...)
	}
	out[CanarySecretKey] = []byte(s.canary)
	return out
}

func (s *suite) createRequest(name string) *driverv1alpha1.CreateMachineRequest {
	return &driverv1alpha1.CreateMachineRequest{
		Machine:      s.machine(name),
		MachineClass: s.class(),
		Secrets:      s.secrets(),
		UserData:     append([]byte(nil), s.cfg.UserData...),
	}
}

func (s *suite) statusRequest(name, providerID string) *driverv1alpha1.GetMachineStatusRequest {
	m := s.machine(name)
	m.ProviderId = providerID
	return &driverv1alpha1.GetMachineStatusRequest{Machine: m, MachineClass: s.class(), Secrets: s.secrets()}
}

// minimalMachine is the Machine the orphan collector sends (§11.7): name,
// namespace and provider ID only. A driver must not require more (§4.1).
func (s *suite) minimalMachine(name, providerID string) *driverv1alpha1.Machine {
	return &driverv1alpha1.Machine{Name: name, Namespace: s.cfg.Namespace, ProviderId: providerID}
}

func (s *suite) deleteRequest(v *vm) *driverv1alpha1.DeleteMachineRequest {
	m := s.machine(v.name)
	m.ProviderId = v.providerID
	return &driverv1alpha1.DeleteMachineRequest{
		Machine: m, MachineClass: s.class(), Secrets: s.secrets(), LastKnownState: v.lastKnownState,
	}
}

func (s *suite) listRequest() *driverv1alpha1.ListMachinesRequest {
	return &driverv1alpha1.ListMachinesRequest{MachineClass: s.class(), Secrets: s.secrets()}
}

// track records that a VM named name may exist from now on and registers a
// cleanup on t that deletes it. Call it before the CreateMachine, so that a
// create that fails or times out after all made a VM is cleaned up too.
func (s *suite) track(t T, name string) *vm {
	s.mu.Lock()
	v, ok := s.vms[name]
	if !ok {
		v = &vm{name: name}
		s.vms[name] = v
	}
	s.mu.Unlock()
	t.Cleanup(func() {
		if err := s.deleteWithRetry(t, v); err != nil {
			ruleCleanup.errorf(t, "cleanup: DeleteMachine of %s answered %s; the VM may be left behind", v.name, describe(err))
		}
	})
	return v
}

// record stores what a create or status call said about v.
func (s *suite) record(v *vm, providerID, nodeName, lastKnownState string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if providerID != "" {
		v.providerID = providerID
	}
	if nodeName != "" {
		v.nodeName = nodeName
	}
	if lastKnownState != "" {
		v.lastKnownState = lastKnownState
	}
	v.deleted = false
}

// createVM creates a VM for purpose with the configured class and ends the
// test when that fails: most tests need a VM to check anything at all.
func (s *suite) createVM(t T, purpose string) *vm {
	t.Helper()
	v := s.track(t, s.name(purpose))
	resp, err := s.createMachine(t, s.createRequest(v.name))
	if err != nil {
		ruleCreateOK.fatalf(t, "CreateMachine of %s answered %s", v.name, describe(err))
	}
	s.checkCreateResponse(t, v.name, resp)
	s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
	return v
}

// fixture returns a VM shared by the tests that only read it, created on
// first use and deleted at the end of the suite.
func (s *suite) fixture(t T) *vm {
	t.Helper()
	s.fixtureOnce.Do(func() {
		name := s.name("shared")
		s.mu.Lock()
		v := &vm{name: name}
		s.vms[name] = v
		s.mu.Unlock()
		resp, err := s.createMachine(t, s.createRequest(name))
		if err != nil {
			s.fixtureErr = fmt.Sprintf("CreateMachine of the shared machine %s answered %s", name, describe(err))
			return
		}
		s.record(v, resp.GetProviderId(), resp.GetNodeName(), resp.GetLastKnownState())
		s.fixtureVM = v
	})
	if s.fixtureVM == nil {
		ruleCreateOK.fatalf(t, "%s", s.fixtureErr)
	}
	return s.fixtureVM
}

// retryable are the codes on which the core retries a call soon (§7); the
// suite's own cleanups and retries do the same.
func retryable(err error) bool {
	switch codeOf(err) {
	case codes.Aborted, codes.Unavailable, codes.DeadlineExceeded, codes.Unknown:
		return true
	}
	return false
}

// deleteWithRetry deletes v unless it is known to be deleted, retrying as the
// core would for up to the Delete timeout. NOT_FOUND counts as deleted here:
// the dedicated tests judge that answer.
func (s *suite) deleteWithRetry(t T, v *vm) error {
	s.mu.Lock()
	deleted := v.deleted
	s.mu.Unlock()
	if deleted {
		return nil
	}
	err := retry(s.cfg.Timeouts.Delete, func() error {
		_, err := s.deleteMachine(t, s.deleteRequest(v))
		return err
	})
	if err == nil || codeOf(err) == codes.NotFound {
		s.markDeleted(v)
		return nil
	}
	return err
}

func (s *suite) markDeleted(v *vm) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v.deleted = true
}

// retry calls f until it answers something other than a retryable code or
// the budget is spent, with a backoff from 100ms to 2s.
func retry(budget time.Duration, f func() error) error {
	deadline := time.Now().Add(budget)
	wait := 100 * time.Millisecond
	for {
		err := f()
		if !retryable(err) || time.Now().Add(wait).After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// listOwn lists the class's VMs and returns the provider IDs per machine
// name, only for names within the run's prefix: the backend may hold other
// VMs, which the suite never judges.
func (s *suite) listOwn(t T) (map[string][]string, error) {
	t.Helper()
	resp, err := s.listMachines(t, s.listRequest())
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, m := range resp.GetMachines() {
		if !strings.HasPrefix(m.GetMachineName(), s.prefix) {
			continue
		}
		if m.GetProviderId() == "" {
			ruleListResponse.errorf(t, "the entry for %s has no provider_id", m.GetMachineName())
		}
		out[m.GetMachineName()] = append(out[m.GetMachineName()], m.GetProviderId())
	}
	return out, nil
}

// listOwnUntil lists like listOwn until done holds for the listing, for up
// to the List timeout, and returns the last listing. A provider's list API
// may lag behind its creations (eventually consistent APIs), and a driver
// cannot list a VM its provider does not return yet (§6.5.3: leaving a VM
// out is safe), so a check that expects a new VM waits for it rather than
// judging the first listing. A run waits in vain at most once: the failure
// is reported then, and waiting again would only slow the run.
func (s *suite) listOwnUntil(t T, done func(listed map[string][]string) bool) (map[string][]string, error) {
	t.Helper()
	deadline := time.Now().Add(s.cfg.Timeouts.List)
	wait := 100 * time.Millisecond
	for {
		listed, err := s.listOwn(t)
		if err != nil || done(listed) {
			return listed, err
		}
		s.mu.Lock()
		spent := s.listWaitSpent || time.Now().Add(wait).After(deadline)
		s.listWaitSpent = spent
		s.mu.Unlock()
		if spent {
			return listed, nil
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// listed reports whether listing holds the VM v with its provider ID.
func listed(listing map[string][]string, v *vm) bool {
	return slices.Contains(listing[v.name], v.providerID)
}

// sweep deletes every VM of the run that is still there: the tracked ones,
// and with ListMachines also any VM of the run's prefix the driver lists.
// It reports what it cannot delete, so that the user can delete it by hand.
func (s *suite) sweep(t T) {
	s.mu.Lock()
	var left []*vm
	for _, v := range s.vms {
		if !v.deleted {
			left = append(left, v)
		}
	}
	s.mu.Unlock()
	for _, v := range left {
		if err := s.deleteWithRetry(t, v); err != nil {
			ruleCleanup.errorf(t, "final sweep: DeleteMachine of %s answered %s; delete its VM by hand", v.name, describe(err))
		}
	}
	if !s.caps[driverv1alpha1.Capability_TYPE_LIST_MACHINES] {
		return
	}
	listed, err := s.listOwn(t)
	if err != nil {
		t.Logf("final sweep: ListMachines answered %s", describe(err))
		return
	}
	for name, ids := range listed {
		for _, id := range ids {
			v := &vm{name: name, providerID: id}
			if err := s.deleteWithRetry(t, v); err != nil {
				ruleCleanup.errorf(t, "final sweep: DeleteMachine of %s (%s) answered %s; delete its VM by hand", name, id, describe(err))
			}
		}
	}
}
