package machine

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/drain"
	"github.com/machina-io/machina/core/internal/driver"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// maxVolumesPerCall is the Driver API's limit of volumes in one
// GetVolumeIDs request.
const maxVolumesPerCall = 1024

// volumeIDs is the drain's mapping of PersistentVolumes to provider volume
// IDs: the driver's GetVolumeIDs when it advertises TYPE_GET_VOLUME_IDS,
// else nil (the drain then tells a detach by VolumeAttachments only). The
// driver is the one of the machine's class.
func (r *Reconciler) volumeIDs(s *scope) drain.VolumeIDsFunc {
	dc := r.driverOf(s)
	if dc == nil || !dc.Has(driverv1alpha1.Capability_TYPE_GET_VOLUME_IDS) {
		return nil
	}
	return func(ctx context.Context, pvs []*corev1.PersistentVolume) (map[string]string, error) {
		ids := map[string]string{}
		for start := 0; start < len(pvs); start += maxVolumesPerCall {
			req := &driverv1alpha1.GetVolumeIDsRequest{}
			for _, pv := range pvs[start:min(start+maxVolumesPerCall, len(pvs))] {
				msg, err := persistentVolumeMessage(pv)
				if err != nil {
					return nil, err
				}
				req.Volumes = append(req.Volumes, msg)
			}
			resp, err := dc.GetVolumeIDs(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("GetVolumeIDs: %w", err)
			}
			for _, v := range resp.GetVolumeIds() {
				ids[v.GetPersistentVolumeName()] = v.GetVolumeId()
			}
		}
		return ids, nil
	}
}

// driverOf returns the driver of the machine's class: the one loadClass
// found, or else the one the class in the cache routes to; nil when there
// is none.
func (r *Reconciler) driverOf(s *scope) *driver.Client {
	if s.driver != nil {
		return s.driver
	}
	class := &v1alpha1.MachineClass{}
	// A read from the cache: it does not wait on the network.
	if err := r.Control.Get(context.Background(), client.ObjectKey{Namespace: s.machine.Namespace, Name: s.machine.Spec.Class.Name}, class); err != nil {
		return nil
	}
	dc, err := r.Drivers.ForProvider(class.Provider)
	if err != nil {
		return nil
	}
	return dc
}

// persistentVolumeMessage is a PersistentVolume as the Driver API carries
// it: its name, its spec as Kubernetes JSON, and the CSI driver and handle
// when it is a CSI volume.
func persistentVolumeMessage(pv *corev1.PersistentVolume) (*driverv1alpha1.PersistentVolume, error) {
	spec, err := json.Marshal(pv.Spec)
	if err != nil {
		return nil, fmt.Errorf("encoding the spec of PersistentVolume %s: %w", pv.Name, err)
	}
	msg := &driverv1alpha1.PersistentVolume{Name: pv.Name, Spec: spec}
	if csi := pv.Spec.CSI; csi != nil {
		msg.CsiDriver, msg.CsiVolumeHandle = csi.Driver, csi.VolumeHandle
	}
	return msg, nil
}
