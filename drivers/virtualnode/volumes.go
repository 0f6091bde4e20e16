package virtualnode

import (
	"context"
	"encoding/json"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
	"github.com/machina-io/machina/sdk"
)

// GetVolumeIDs maps CSI volumes of CSIDriverName to their volume handles
// and leaves every other volume out. The CSI driver and handle come from the
// request's csi fields, or from spec.csi when those are empty.
func (d *Driver) GetVolumeIDs(_ context.Context, req *driverv1alpha1.GetVolumeIDsRequest) (*driverv1alpha1.GetVolumeIDsResponse, error) {
	if len(req.GetVolumes()) == 0 {
		return nil, sdk.InvalidArgument("volumes is required")
	}
	resp := &driverv1alpha1.GetVolumeIDsResponse{}
	for i, v := range req.GetVolumes() {
		if v.GetName() == "" {
			return nil, sdk.InvalidArgument("volumes[%d].name is required", i)
		}
		csiDriver, handle := v.GetCsiDriver(), v.GetCsiVolumeHandle()
		if csiDriver == "" && len(v.GetSpec()) > 0 {
			var spec struct {
				CSI *struct {
					Driver       string `json:"driver"`
					VolumeHandle string `json:"volumeHandle"`
				} `json:"csi"`
			}
			if err := json.Unmarshal(v.GetSpec(), &spec); err != nil {
				return nil, sdk.InvalidArgument("volumes[%d].spec is not a JSON PersistentVolumeSpec", i)
			}
			if spec.CSI != nil {
				csiDriver, handle = spec.CSI.Driver, spec.CSI.VolumeHandle
			}
		}
		if csiDriver == CSIDriverName && handle != "" {
			resp.VolumeIds = append(resp.VolumeIds, &driverv1alpha1.VolumeID{
				PersistentVolumeName: v.GetName(), VolumeId: handle,
			})
		}
	}
	return resp, nil
}
