package orphan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/machina-io/machina/core/api/v1alpha1"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func TestJudge(t *testing.T) {
	vm := &driverv1alpha1.ListedMachine{MachineName: "m", ProviderId: "p://vm-1"}
	machine := func(providerID string, phase v1alpha1.MachinePhase) *v1alpha1.Machine {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m"}}
		m.Spec.ProviderID = providerID
		m.Status.CurrentStatus.Phase = phase
		return m
	}
	for _, tc := range []struct {
		name    string
		machine *v1alpha1.Machine
		orphan  bool
	}{
		{"no machine", nil, true},
		{"own VM, running", machine("p://vm-1", v1alpha1.MachineRunning), false},
		{"own VM, terminating", machine("p://vm-1", v1alpha1.MachineTerminating), false},
		{"being created, no provider ID", machine("", ""), false},
		{"crash-looping, no provider ID", machine("", v1alpha1.MachineCrashLoopBackOff), false},
		{"pending, no provider ID", machine("", v1alpha1.MachinePending), false},
		{"failed, no provider ID", machine("", v1alpha1.MachineFailed), false},
		{"other VM but phase empty", machine("p://vm-2", ""), false},
		{"other VM but crash-looping", machine("p://vm-2", v1alpha1.MachineCrashLoopBackOff), false},
		{"other VM, running: duplicate", machine("p://vm-2", v1alpha1.MachineRunning), true},
		{"other VM, pending: duplicate", machine("p://vm-2", v1alpha1.MachinePending), true},
		{"other VM, failed: duplicate", machine("p://vm-2", v1alpha1.MachineFailed), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orphan, why := judge(vm, tc.machine)
			assert.Equal(t, tc.orphan, orphan, why)
			assert.NotEmpty(t, why)
		})
	}
}
