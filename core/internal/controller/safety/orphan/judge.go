package orphan

import (
	"fmt"

	"github.com/machina-io/machina/core/api/v1alpha1"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// judge decides whether a listed VM is an orphan given the Machine of its
// name in the class's namespace (nil when there is none). why explains the
// verdict for logs and events.
func judge(vm *driverv1alpha1.ListedMachine, m *v1alpha1.Machine) (orphan bool, why string) {
	if m == nil {
		return true, fmt.Sprintf("no Machine %q exists", vm.GetMachineName())
	}
	phase := m.Status.CurrentStatus.Phase
	switch {
	case m.Spec.ProviderID == "":
		// The create may have reached the driver and not come back yet;
		// this VM is about to become the machine's.
		return false, "its Machine is being created (no provider ID yet)"
	case phase == "" || phase == v1alpha1.MachineCrashLoopBackOff:
		// MCM's rule: a machine whose creation is still being retried may
		// be about to adopt or replace its VM.
		return false, fmt.Sprintf("its Machine is being created (phase %q)", phase)
	case m.Spec.ProviderID == vm.GetProviderId():
		return false, "it is its Machine's VM"
	}
	return true, fmt.Sprintf("Machine %q has another VM, %s", m.Name, m.Spec.ProviderID)
}
