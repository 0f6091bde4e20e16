package virtualnode

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func TestGetVolumeIDs(t *testing.T) {
	d := New(Options{Logger: quiet})
	resp, err := d.GetVolumeIDs(context.Background(), &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
		{Name: "ours", CsiDriver: CSIDriverName, CsiVolumeHandle: "vol-1"},
		{Name: "ours-in-spec", Spec: []byte(`{"csi":{"driver":"virtualnode.csi.machina.io","volumeHandle":"vol-2"}}`)},
		{Name: "theirs", CsiDriver: "ebs.csi.aws.com", CsiVolumeHandle: "vol-3"},
		{Name: "hostpath", Spec: []byte(`{"hostPath":{"path":"/data"}}`)},
	}})
	require.NoError(t, err)
	got := map[string]string{}
	for _, v := range resp.GetVolumeIds() {
		got[v.GetPersistentVolumeName()] = v.GetVolumeId()
	}
	assert.Equal(t, map[string]string{"ours": "vol-1", "ours-in-spec": "vol-2"}, got)

	_, err = d.GetVolumeIDs(context.Background(), &driverv1alpha1.GetVolumeIDsRequest{})
	requireCode(t, codes.InvalidArgument, err)
	_, err = d.GetVolumeIDs(context.Background(), &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{{Name: "x", Spec: []byte("{")}}})
	requireCode(t, codes.InvalidArgument, err)
}
