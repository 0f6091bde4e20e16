package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// vmTracker looks at the provider's side, as the resources tracker (RTI) of
// MCM's framework looks at a cloud: it talks to the driver directly over its
// socket, beside the manager.
type vmTracker struct {
	machines driverv1alpha1.MachineServiceClient
}

// newVMTracker connects to the driver at endpoint; the connection is closed
// when t ends.
func newVMTracker(t *testing.T, endpoint string) *vmTracker {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return &vmTracker{machines: driverv1alpha1.NewMachineServiceClient(conn)}
}

// class is the Driver API view of one of the test classes.
func class(name string) *driverv1alpha1.MachineClass {
	return &driverv1alpha1.MachineClass{
		Name:         name,
		Namespace:    namespace,
		Provider:     "virtualnode",
		ProviderSpec: []byte(providerSpecs[name]),
	}
}

// createVM creates a VM for a machine that has no Machine object: an orphan
// as a crashed manager or a lost create response leaves one behind. It
// returns the VM's provider ID.
func (v *vmTracker) createVM(ctx context.Context, machine, className string) (string, error) {
	resp, err := v.machines.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: machine, Namespace: namespace},
		MachineClass: class(className),
	})
	if err != nil {
		return "", fmt.Errorf("CreateMachine(%s): %w", machine, err)
	}
	return resp.GetProviderId(), nil
}

// list returns "class/machine" of every VM the driver lists for the test
// classes, sorted: IsOrphanedResourcesAvailable of MCM's framework is this
// list being non-empty once no Machine exists.
func (v *vmTracker) list(ctx context.Context) ([]string, error) {
	var vms []string
	for _, name := range []string{classV1, classV2} {
		resp, err := v.machines.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: class(name)})
		if err != nil {
			return nil, fmt.Errorf("ListMachines(%s): %w", name, err)
		}
		for _, m := range resp.GetMachines() {
			vms = append(vms, name+"/"+m.GetMachineName())
		}
	}
	slices.Sort(vms)
	return vms, nil
}
