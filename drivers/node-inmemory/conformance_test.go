package nodeinmemory

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance"
)

// The files the documented machina-conformance command line uses
// (docs/writing-a-driver.md §3); the library test loads the same ones.
const (
	classFile   = "testdata/machineclass.yaml"
	volumesFile = "testdata/volumes.yaml"
)

// TestConformance runs the whole conformance suite against the Node.js
// driver: with the Python driver, the proof that the Driver API can be
// served from another language with nothing but the proto files and
// docs/driver-api.md.
func TestConformance(t *testing.T) {
	d := startDriver(t)
	class, err := conformance.LoadMachineClass(classFile)
	require.NoError(t, err)
	volumes, err := conformance.LoadVolumeFixtures(volumesFile)
	require.NoError(t, err)
	conformance.Run(t, conformance.Config{
		Endpoint:     d.Endpoint,
		MachineClass: class,
		Secrets:      map[string][]byte{"token": []byte("conformance-token")},
		UserData:     []byte("#cloud-config\n"),
		Volumes:      volumes,
		// The driver changes tags on a running VM, and nothing else.
		UpdatedProviderSpec:    json.RawMessage(`{"size":"small","tags":{"team":"conformance"}}`),
		NeedsNewVMProviderSpec: json.RawMessage(`{"size":"large"}`),
		Timeouts: conformance.Timeouts{
			Identity: 10 * time.Second, Ready: 30 * time.Second,
			Create: 30 * time.Second, Initialize: 30 * time.Second, Delete: 30 * time.Second,
			Status: 10 * time.Second, List: 10 * time.Second, VolumeIDs: 10 * time.Second,
		},
	})
}
