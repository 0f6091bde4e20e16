package inmemory

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func TestGetVolumeIDs(t *testing.T) {
	ctx := context.Background()
	vols := []*driverv1alpha1.PersistentVolume{
		{Name: "csi-ours", CsiDriver: DefaultCSIDriverName, CsiVolumeHandle: "vol-1",
			Spec: []byte(`{"csi":{"driver":"inmemory.csi.machina.io","volumeHandle":"vol-1"}}`)},
		{Name: "csi-ours-from-spec", Spec: []byte(`{"csi":{"driver":"inmemory.csi.machina.io","volumeHandle":"vol-2"}}`)},
		{Name: "csi-theirs", CsiDriver: "ebs.csi.aws.com", CsiVolumeHandle: "vol-3",
			Spec: []byte(`{"csi":{"driver":"ebs.csi.aws.com","volumeHandle":"vol-3"}}`)},
		{Name: "hostpath-ours", Spec: []byte(`{"hostPath":{"path":"/inmemory/disk-4"}}`)},
		{Name: "hostpath-theirs", Spec: []byte(`{"hostPath":{"path":"/var/lib/disk-5"}}`)},
		{Name: "nfs", Spec: []byte(`{"nfs":{"server":"x","path":"/inmemory/not-a-hostpath"}}`)},
	}
	resp, err := New(Options{}).GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{Volumes: vols})
	require.NoError(t, err)
	got := map[string]string{}
	for _, v := range resp.GetVolumeIds() {
		got[v.GetPersistentVolumeName()] = v.GetVolumeId()
	}
	assert.Equal(t, map[string]string{
		"csi-ours":           "vol-1",
		"csi-ours-from-spec": "vol-2",
		"hostpath-ours":      "/inmemory/disk-4",
	}, got)

	// Another CSI driver name makes other volumes ours.
	resp, err = New(Options{CSIDriverName: "ebs.csi.aws.com"}).GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{Volumes: vols})
	require.NoError(t, err)
	got = map[string]string{}
	for _, v := range resp.GetVolumeIds() {
		got[v.GetPersistentVolumeName()] = v.GetVolumeId()
	}
	assert.Equal(t, map[string]string{"csi-theirs": "vol-3", "hostpath-ours": "/inmemory/disk-4"}, got)
}

func TestGetVolumeIDsRejectsInvalidRequests(t *testing.T) {
	ctx := context.Background()
	d := New(Options{})
	_, err := d.GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{})
	requireCode(t, codes.InvalidArgument, err)
	assert.Contains(t, err.Error(), "volumes is required")

	_, err = d.GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
		{Name: "ok", Spec: []byte(`{}`)}, {Spec: []byte(`{}`)},
	}})
	requireCode(t, codes.InvalidArgument, err)
	assert.Contains(t, err.Error(), "volumes[1].name is required")

	_, err = d.GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
		{Name: "bad", Spec: []byte(`{not json`)},
	}})
	requireCode(t, codes.InvalidArgument, err)
	assert.Contains(t, err.Error(), "volumes[0].spec is not valid JSON")

	_, err = d.GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
		{Name: "no-spec", CsiDriver: DefaultCSIDriverName, CsiVolumeHandle: "vol-1"},
	}})
	requireCode(t, codes.InvalidArgument, err)
	assert.Contains(t, err.Error(), "volumes[0].spec is required")

	// JSON, but no PersistentVolumeSpec (§6.6.4); null would otherwise
	// decode into an empty spec.
	for _, spec := range []string{`[{"csi":{}}]`, `"hostPath"`, `null`, ` 42`} {
		_, err = d.GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
			{Name: "ok", Spec: []byte(`{}`)}, {Name: "not-an-object", Spec: []byte(spec)},
		}})
		requireCode(t, codes.InvalidArgument, err)
		assert.Contains(t, err.Error(), "volumes[1].spec must be a JSON object", "spec %s", spec)
	}

	// A name sent twice could not be answered unambiguously (§6.6.4).
	_, err = d.GetVolumeIDs(ctx, &driverv1alpha1.GetVolumeIDsRequest{Volumes: []*driverv1alpha1.PersistentVolume{
		{Name: "a", Spec: []byte(`{}`)}, {Name: "b", Spec: []byte(`{}`)}, {Name: "a", Spec: []byte(`{}`)},
	}})
	requireCode(t, codes.InvalidArgument, err)
	assert.Contains(t, err.Error(), `volumes[2].name "a" repeats volumes[0].name`)
}
