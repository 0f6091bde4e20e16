package conformance

import (
	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// The rules of a Machine's key (§3.6 of docs/driver-api.md answered them).
var (
	ruleNamespaceKey = rule{"R-6.1.3-no-vm-machine-but", "a Machine is its namespace and name: a VM created for another namespace is never reported, deleted or returned"}
	ruleAnyClassName = rule{"R-6.4.1-vm-looked-up-machine", "GetMachineStatus finds the Machine's VM whatever class name the request carries"}
)

// testOtherNamespace uses the shared VM's name in another namespace. A
// Machine is its namespace and name (§1.2, §6.1.3): the VM of the shared
// machine must never be reported, deleted or returned for a Machine of
// another namespace, or a core of one namespace would take over or delete
// the VM of another's. CreateMachine there may create that Machine's own
// VM, or answer ALREADY_EXISTS where the provider cannot hold two VMs of
// one name.
func testOtherNamespace(s *suite, t T) {
	shared := s.fixture(t)
	ns := "other-" + randomID(6)
	inOther := func(providerID string) (*driverv1alpha1.Machine, *driverv1alpha1.MachineClass) {
		m, c := s.machine(shared.name), s.class()
		m.Namespace, c.Namespace, m.ProviderId = ns, ns, providerID
		return m, c
	}

	for _, lookup := range []struct{ how, providerID string }{
		{"by name", ""},
		{"by name and the shared VM's provider_id", shared.providerID},
	} {
		m, c := inOther(lookup.providerID)
		resp, err := s.getMachineStatus(t, &driverv1alpha1.GetMachineStatusRequest{Machine: m, MachineClass: c, Secrets: s.secrets()})
		switch {
		case err == nil:
			ruleNamespaceKey.errorf(t, "GetMachineStatus of %s/%s %s answered OK with provider ID %q; the only VM of that name was created in namespace %s", ns, shared.name, lookup.how, resp.GetProviderId(), s.cfg.Namespace)
		case codeOf(err) != codes.NotFound:
			ruleNamespaceKey.errorf(t, "GetMachineStatus of %s/%s %s answered %s, want NOT_FOUND", ns, shared.name, lookup.how, describe(err))
		}
	}

	m, c := inOther("")
	_, err := s.deleteMachine(t, &driverv1alpha1.DeleteMachineRequest{Machine: m, MachineClass: c, Secrets: s.secrets()})
	expectOK(t, ruleNamespaceKey, "DeleteMachine of "+ns+"/"+shared.name+" (no VM in that namespace)", err)
	s.checkSharedKept(t, "DeleteMachine of "+ns+"/"+shared.name)

	m, c = inOther("")
	created, err := s.createMachine(t, &driverv1alpha1.CreateMachineRequest{Machine: m, MachineClass: c, Secrets: s.secrets()})
	switch codeOf(err) {
	case codes.AlreadyExists:
		t.Logf("CreateMachine of %s/%s answered ALREADY_EXISTS: the provider holds one VM per name (%s)", ns, shared.name, describe(err))
	case codes.OK:
		other := created.GetProviderId()
		// That Machine's VM: delete it with its own namespace, also when a
		// check below fails.
		t.Cleanup(func() {
			m, c := inOther(other)
			err := retry(s.cfg.Timeouts.Delete, func() error {
				_, err := s.deleteMachine(t, &driverv1alpha1.DeleteMachineRequest{Machine: m, MachineClass: c, Secrets: s.secrets()})
				return err
			})
			if err != nil {
				ruleCleanup.errorf(t, "cleanup: DeleteMachine of %s/%s (%s) answered %s; the VM may be left behind", ns, shared.name, other, describe(err))
			}
		})
		if other == shared.providerID {
			ruleNamespaceKey.errorf(t, "CreateMachine of %s/%s returned the VM %s, created for namespace %s", ns, shared.name, other, s.cfg.Namespace)
			return
		}
		s.checkCreateResponse(t, ns+"/"+shared.name, created)
	default:
		ruleNamespaceKey.errorf(t, "CreateMachine of %s/%s answered %s, want OK with a VM of its own or ALREADY_EXISTS", ns, shared.name, describe(err))
	}
	s.checkSharedKept(t, "CreateMachine of "+ns+"/"+shared.name)
}

// checkSharedKept checks that the shared VM is still found, unchanged,
// after a call for a Machine of the same name in another namespace.
func (s *suite) checkSharedKept(t T, after string) {
	t.Helper()
	shared := s.fixture(t)
	resp, err := s.getMachineStatus(t, s.statusRequest(shared.name, shared.providerID))
	switch {
	case err != nil:
		ruleNamespaceKey.errorf(t, "after %s, GetMachineStatus of %s/%s answered %s, want OK: the driver touched the VM of another namespace", after, s.cfg.Namespace, shared.name, describe(err))
	case resp.GetProviderId() != shared.providerID:
		ruleNamespaceKey.errorf(t, "after %s, GetMachineStatus of %s/%s returned provider ID %q, want %q", after, s.cfg.Namespace, shared.name, resp.GetProviderId(), shared.providerID)
	}
}

// testStatusOtherClassName looks the shared VM up with another class name
// and the same provider spec: the class name is not part of a Machine's key,
// and a Machine whose class was changed keeps its VM (§6.4.1, §11.8).
func testStatusOtherClassName(s *suite, t T) {
	shared := s.fixture(t)
	for _, lookup := range []struct{ how, providerID string }{
		{"by name", ""},
		{"by name and provider_id", shared.providerID},
	} {
		req := s.statusRequest(shared.name, lookup.providerID)
		req.MachineClass.Name += "-renamed"
		resp, err := s.getMachineStatus(t, req)
		switch {
		case err != nil:
			ruleAnyClassName.errorf(t, "GetMachineStatus of %s %s with class name %s answered %s, want OK", shared.name, lookup.how, req.MachineClass.GetName(), describe(err))
		case resp.GetProviderId() != shared.providerID:
			ruleAnyClassName.errorf(t, "GetMachineStatus of %s %s with class name %s returned provider ID %q, want %q", shared.name, lookup.how, req.MachineClass.GetName(), resp.GetProviderId(), shared.providerID)
		}
	}
}
