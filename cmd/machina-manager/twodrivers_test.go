package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// TestTwoDrivers runs one machina-manager with two different drivers as
// real processes, machina-driver-inmemory (provider "inmemory") and
// machina-driver-virtualnode (provider "virtualnode"), and a
// MachineDeployment on each: every machine's VM is made by the driver of
// its class's provider, and neither driver sees the other's machines.
func TestTwoDrivers(t *testing.T) {
	const ns = "two-drivers"
	managerBin, inmemoryBin := buildBinaries(t)
	virtualnodeBin := goBuild(t, filepath.Join(repoRoot(t), "drivers", "virtualnode"), "./cmd/machina-driver-virtualnode", t.TempDir(), "machina-driver-virtualnode")

	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	sockets := socketDir(t)
	inmemorySocket, virtualnodeSocket := filepath.Join(sockets, "inmemory.sock"), filepath.Join(sockets, "virtualnode.sock")
	startDriver(t, inmemoryBin, inmemorySocket)
	// The virtualnode driver registers a Node per VM in the API server of
	// the test; the manager runs without a target cluster, so machines are
	// Available once their VM exists, whichever driver made it.
	start(t, "virtualnode", virtualnodeBin, "--endpoint=unix://"+virtualnodeSocket, "--target-kubeconfig="+env.Kubeconfig)
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, waitFile(waitCtx, virtualnodeSocket))

	metricsAddr, healthAddr := freeAddress(t), freeAddress(t)
	manager := start(t, "manager", managerBin, managerFlags(env.Kubeconfig, ns, "inmemory=unix://"+inmemorySocket, metricsAddr, healthAddr,
		"--driver-endpoint=virtualnode=unix://"+virtualnodeSocket,
		"--target-kubeconfig=none",
		"--leader-elect=false",
		"--concurrent-syncs=5",
	)...)
	health := "http://" + healthAddr
	requireHTTP(t, manager, health+"/readyz", http.StatusOK)
	verbose := httpGet(t, health+"/readyz?verbose")
	assert.Contains(t, verbose, "[+]driver-inmemory ok")
	assert.Contains(t, verbose, "[+]driver-virtualnode ok")

	classes := map[string]string{ // provider -> providerSpec
		"inmemory":    providerSpec,
		"virtualnode": `{"bootDelay":"1s","capacity":{"cpu":"2","memory":"4Gi","pods":"110"}}`,
	}
	for provider, spec := range classes {
		require.NoError(t, c.Create(ctx, &v1alpha1.MachineClass{
			ObjectMeta:   metav1.ObjectMeta{Namespace: ns, Name: provider},
			Provider:     provider,
			ProviderSpec: runtime.RawExtension{Raw: []byte(spec)},
		}))
		labels := map[string]string{"pool": provider}
		require.NoError(t, c.Create(ctx, &v1alpha1.MachineDeployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool-" + provider},
			Spec: v1alpha1.MachineDeploymentSpec{
				Replicas: 2,
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: v1alpha1.MachineTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: provider}},
				},
			},
		}))
	}

	// Both deployments get two Available machines.
	machinesOf := map[string][]string{}
	require.Eventually(t, func() bool {
		list := &v1alpha1.MachineList{}
		if c.List(ctx, list, client.InNamespace(ns)) != nil {
			return false
		}
		got := map[string][]string{}
		for _, m := range list.Items {
			if m.Status.CurrentStatus.Phase == v1alpha1.MachineAvailable {
				got[m.Labels["pool"]] = append(got[m.Labels["pool"]], m.Name)
			}
		}
		machinesOf = got
		return len(got["inmemory"]) == 2 && len(got["virtualnode"]) == 2
	}, waitFor, poll, "both deployments never had two Available machines; had %v", machinesOf)

	// Each driver lists exactly its own deployment's machines, and knows
	// nothing of the other's.
	for provider, socket := range map[string]string{"inmemory": inmemorySocket, "virtualnode": virtualnodeSocket} {
		other := "virtualnode"
		if provider == other {
			other = "inmemory"
		}
		ms := machineService(t, socket)
		assert.ElementsMatch(t, machinesOf[provider], listedMachines(t, ms, ns, provider, classes[provider]), "driver %s lists the machines of its class", provider)
		assert.Empty(t, listedMachines(t, ms, ns, other, classes[other]), "driver %s lists no machine of the %s class", provider, other)
		for _, name := range machinesOf[other] {
			callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := ms.GetMachineStatus(callCtx, &driverv1alpha1.GetMachineStatusRequest{
				Machine:      &driverv1alpha1.Machine{Name: name, Namespace: ns},
				MachineClass: &driverv1alpha1.MachineClass{Name: other, Namespace: ns, Provider: other, ProviderSpec: []byte(classes[other])},
			})
			cancel()
			assert.Equal(t, codes.NotFound, status.Code(err), "driver %s has no VM for %s's machine %s", provider, other, name)
		}
	}

	// The manager's side: two creates through each driver, by its name.
	body := httpGet(t, "http://"+metricsAddr+"/metrics")
	for _, driver := range []string{"inmemory", "virtualnode"} {
		want := fmt.Sprintf(`grpc_client_handled_total{driver=%q,grpc_code="OK",grpc_method="CreateMachine",grpc_service="machina.driver.v1alpha1.MachineService",grpc_type="unary"} 2`, driver)
		assert.True(t, strings.Contains(body, want), "/metrics lacks %s", want)
	}
}

// machineService connects to the driver at socket for the test.
func machineService(t *testing.T, socket string) driverv1alpha1.MachineServiceClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return driverv1alpha1.NewMachineServiceClient(conn)
}

// listedMachines lists the machine names of class namespace/name (named
// after its provider) at a driver.
func listedMachines(t *testing.T, ms driverv1alpha1.MachineServiceClient, namespace, name, spec string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	resp, err := ms.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{
		MachineClass: &driverv1alpha1.MachineClass{Name: name, Namespace: namespace, Provider: name, ProviderSpec: []byte(spec)},
	})
	require.NoError(t, err)
	var names []string
	for _, m := range resp.GetMachines() {
		names = append(names, m.GetMachineName())
	}
	return names
}
