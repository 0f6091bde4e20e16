package inmemory

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// machine returns a machine in namespace "default".
func machine(name string) *driverv1alpha1.Machine {
	return &driverv1alpha1.Machine{Name: name, Namespace: "default"}
}

// class returns a machine class with the given provider spec.
func class(name, spec string) *driverv1alpha1.MachineClass {
	return &driverv1alpha1.MachineClass{Name: name, Namespace: "default", ProviderSpec: []byte(spec)}
}

func createReq(name, className, spec string) *driverv1alpha1.CreateMachineRequest {
	return &driverv1alpha1.CreateMachineRequest{Machine: machine(name), MachineClass: class(className, spec)}
}

func statusReq(m *driverv1alpha1.Machine) *driverv1alpha1.GetMachineStatusRequest {
	return &driverv1alpha1.GetMachineStatusRequest{Machine: m, MachineClass: class("small", "{}")}
}

func deleteReq(m *driverv1alpha1.Machine) *driverv1alpha1.DeleteMachineRequest {
	return &driverv1alpha1.DeleteMachineRequest{Machine: m, MachineClass: class("small", "{}")}
}

// requireCode asserts that err is a gRPC status error with code c.
func requireCode(t *testing.T, c codes.Code, err error) {
	t.Helper()
	require.Error(t, err)
	s, ok := status.FromError(err)
	require.True(t, ok, "not a status error: %v", err)
	require.Equal(t, c, s.Code(), "error: %v", err)
}
