package drain

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/machina-io/machina/drivers/inmemory"
)

// After a pod's CSI volume detached, the drain waits for it to be attached
// to another node (--machine-pv-reattach-timeout) before it evicts the next
// pod with volumes; past the timeout it goes on.
func TestVolumeReattach(t *testing.T) {
	c := startCluster(t)
	d := New(c.cs)
	const ns, node, other = "reattach", "node-reattach", "node-reattach-other"
	c.namespace(ns)
	c.node(node)
	c.volumePod(ns, "a", node, 100, csiVolume("disk-a"))
	c.volumePod(ns, "b", node, 0, csiVolume("disk-b"))
	vaA := c.attach("pv-reattach-a", node)
	vaB := c.attach("pv-reattach-b", node)
	t0 := time.Now()
	opts := func(w *VolumeWait, now time.Time) Options {
		return Options{Wait: w, Now: now, ReattachTimeout: 90 * time.Second}
	}

	res, err := d.Pass(c.ctx(), node, opts(nil, t0))
	require.NoError(t, err)
	require.NotNil(t, res.Waiting)
	assert.Equal(t, ns+"/a", res.Waiting.Pod)
	c.finalizeTerminating(ns)
	require.NoError(t, c.cs.StorageV1().VolumeAttachments().Delete(c.ctx(), vaA, metav1.DeleteOptions{}))

	// Detached, but attached nowhere else yet: b waits.
	res, err = d.Pass(c.ctx(), node, opts(res.Waiting, t0.Add(time.Second)))
	require.NoError(t, err)
	require.NotNil(t, res.Waiting)
	assert.Equal(t, ns+"/a", res.Waiting.Pod)
	require.NotNil(t, res.Waiting.DetachedAt)
	assert.Equal(t, 1, res.Reattaching)
	assert.Contains(t, res.Summary(), "to be attached to another node")
	assert.False(t, c.terminating(ns, "b"), "b waits for a's volume to be attached elsewhere")

	// a's replacement runs on another node with the volume: b goes.
	moved, err := c.cs.StorageV1().VolumeAttachments().Create(c.ctx(), &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "va-a-other"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: inmemory.DefaultCSIDriverName, NodeName: other,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-reattach-a")}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	moved.Status.Attached = true
	_, err = c.cs.StorageV1().VolumeAttachments().UpdateStatus(c.ctx(), moved, metav1.UpdateOptions{})
	require.NoError(t, err)
	res, err = d.Pass(c.ctx(), node, opts(res.Waiting, t0.Add(2*time.Second)))
	require.NoError(t, err)
	require.NotNil(t, res.Waiting)
	assert.Equal(t, ns+"/b", res.Waiting.Pod)
	assert.True(t, c.terminating(ns, "b"))
	assert.Empty(t, res.ReattachTimedOut)

	// b's volume detaches and is never attached elsewhere: the drain ends
	// after the reattach timeout.
	c.finalizeTerminating(ns)
	require.NoError(t, c.cs.StorageV1().VolumeAttachments().Delete(c.ctx(), vaB, metav1.DeleteOptions{}))
	res, err = d.Pass(c.ctx(), node, opts(res.Waiting, t0.Add(3*time.Second)))
	require.NoError(t, err)
	require.NotNil(t, res.Waiting, "waiting for the reattach")
	res, err = d.Pass(c.ctx(), node, opts(res.Waiting, t0.Add(3*time.Second+90*time.Second)))
	require.NoError(t, err)
	assert.True(t, res.Drained())
	assert.Equal(t, []string{ns + "/b"}, res.ReattachTimedOut)

	// Without a reattach timeout (the library's default), no such wait.
	assert.Zero(t, Options{}.ReattachTimeout)
}
