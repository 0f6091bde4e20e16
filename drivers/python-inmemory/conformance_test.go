package pythoninmemory

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/machina-io/machina/conformance"
)

// volumeFixtures are GetVolumeIDs fixtures for the Python driver: its own
// CSI and hostPath volumes, and two volumes that are not its disks.
var volumeFixtures = []conformance.VolumeFixture{
	{Name: "pv-csi-mine", VolumeID: "vol-1",
		Spec: json.RawMessage(`{"csi":{"driver":"python-inmemory.csi.machina.io","volumeHandle":"vol-1"}}`)},
	{Name: "pv-hostpath-mine", VolumeID: "/python-inmemory/disk-1",
		Spec: json.RawMessage(`{"hostPath":{"path":"/python-inmemory/disk-1"}}`)},
	{Name: "pv-csi-other", NotMine: true,
		Spec: json.RawMessage(`{"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-0abc"}}`)},
	{Name: "pv-nfs", NotMine: true,
		Spec: json.RawMessage(`{"nfs":{"server":"nfs.example","path":"/export"}}`)},
}

// TestConformance runs the whole conformance suite against the Python
// driver: the proof that the Driver API can be served from another
// language with nothing but the proto files and docs/driver-api.md.
func TestConformance(t *testing.T) {
	d := startDriver(t)
	conformance.Run(t, conformance.Config{
		Endpoint: d.Endpoint,
		MachineClass: conformance.MachineClass{
			Name:         "python-conformance",
			ProviderSpec: json.RawMessage(`{"size":"small"}`),
		},
		Secrets:  map[string][]byte{"token": []byte("conformance-token")},
		UserData: []byte("#cloud-config\n"),
		Volumes:  volumeFixtures,
		Timeouts: conformance.Timeouts{
			Identity: 10 * time.Second, Ready: 30 * time.Second,
			Create: 30 * time.Second, Initialize: 30 * time.Second, Delete: 30 * time.Second,
			Status: 10 * time.Second, List: 10 * time.Second, VolumeIDs: 10 * time.Second,
		},
	})
}
