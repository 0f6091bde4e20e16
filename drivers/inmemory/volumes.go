package inmemory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// hostPathPrefix is where hostPath volumes of this provider live.
const hostPathPrefix = "/inmemory/"

// maxVolumes is the Driver API's limit of volumes per GetVolumeIDs call.
const maxVolumes = 1024

// volumeSpec is the part of a core/v1 PersistentVolumeSpec the driver reads.
type volumeSpec struct {
	CSI *struct {
		Driver       string `json:"driver"`
		VolumeHandle string `json:"volumeHandle"`
	} `json:"csi"`
	HostPath *struct {
		Path string `json:"path"`
	} `json:"hostPath"`
}

// GetVolumeIDs maps the volumes that are disks of this provider to their
// IDs (see the package documentation) and leaves the others out.
func (d *Driver) GetVolumeIDs(ctx context.Context, req *driverv1alpha1.GetVolumeIDsRequest) (*driverv1alpha1.GetVolumeIDsResponse, error) {
	if err := d.unlessDisabled(driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS, MethodGetVolumeIDs); err != nil {
		return nil, err
	}
	resp := &driverv1alpha1.GetVolumeIDsResponse{}
	err := d.serve(ctx, MethodGetVolumeIDs, "", func() error {
		vols := req.GetVolumes()
		if len(vols) == 0 {
			return invalid("volumes is required")
		}
		if len(vols) > maxVolumes {
			return invalid("volumes has %d entries, more than %d", len(vols), maxVolumes)
		}
		first := make(map[string]int, len(vols))
		for i, v := range vols {
			id, err := d.volumeID(v)
			if err != nil {
				return invalid("volumes[%d].%s", i, err.Error())
			}
			// The answer names volumes by name: a name sent twice
			// could not be answered unambiguously (§6.6.4).
			if j, dup := first[v.GetName()]; dup {
				return invalid("volumes[%d].name %q repeats volumes[%d].name", i, v.GetName(), j)
			}
			first[v.GetName()] = i
			if id != "" {
				resp.VolumeIds = append(resp.VolumeIds, &driverv1alpha1.VolumeID{
					PersistentVolumeName: v.GetName(), VolumeId: id,
				})
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// volumeID returns the provider volume ID of v, or "" when v is not a disk
// of this provider. Its errors are worded to follow "volumes[i].".
func (d *Driver) volumeID(v *driverv1alpha1.PersistentVolume) (string, error) {
	if v.GetName() == "" {
		return "", errors.New("name is required")
	}
	csiDriver, handle := v.GetCsiDriver(), v.GetCsiVolumeHandle()
	if len(v.GetSpec()) == 0 {
		return "", errors.New("spec is required")
	}
	if !json.Valid(v.GetSpec()) {
		return "", errors.New("spec is not valid JSON")
	}
	// null would decode into an empty struct: only an object is a
	// PersistentVolumeSpec.
	var spec volumeSpec
	if trimmed := bytes.TrimLeft(v.GetSpec(), " \t\r\n"); trimmed[0] != '{' || json.Unmarshal(v.GetSpec(), &spec) != nil {
		return "", errors.New("spec must be a JSON object (a PersistentVolumeSpec)")
	}
	if csiDriver == "" && spec.CSI != nil {
		csiDriver, handle = spec.CSI.Driver, spec.CSI.VolumeHandle
	}
	switch {
	case csiDriver != "":
		if csiDriver == d.opts.CSIDriverName {
			return handle, nil
		}
	case spec.HostPath != nil && strings.HasPrefix(spec.HostPath.Path, hostPathPrefix):
		return spec.HostPath.Path, nil
	}
	return "", nil
}
