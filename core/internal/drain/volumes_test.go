package drain

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/machina-io/machina/drivers/inmemory"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

// volumePod creates a PersistentVolume from src, a claim bound to it, and a
// Running pod of the given priority that mounts the claim on node.
func (c *cluster) volumePod(ns, name, node string, priority int32, src corev1.PersistentVolumeSource) {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: src,
			ClaimRef:               &corev1.ObjectReference{Namespace: ns, Name: name},
		},
	}
	_, err := c.cs.CoreV1().PersistentVolumes().Create(c.ctx(), pv, metav1.CreateOptions{})
	require.NoError(c.t, err)
	_, err = c.cs.CoreV1().PersistentVolumeClaims(ns).Create(c.ctx(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  pv.Name,
		},
	}, metav1.CreateOptions{})
	require.NoError(c.t, err)
	c.pod(ns, name, node, ownedBy("StatefulSet", name), func(p *corev1.Pod) {
		p.Spec.PriorityClassName = c.priorityClass(priority)
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
		}}}
	})
}

// priorityClass returns the name of a PriorityClass of value, creating
// it if needed: the priority admission plugin sets a pod's priority from
// its class only.
func (c *cluster) priorityClass(value int32) string {
	name := fmt.Sprintf("prio-%d", value)
	_, err := c.cs.SchedulingV1().PriorityClasses().Create(c.ctx(), &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value,
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return name
	}
	require.NoError(c.t, err)
	// The admission plugin reads classes from an informer: wait until it
	// knows the new one (a dry-run pod passes admission without a trace).
	require.Eventually(c.t, func() bool {
		_, err := c.cs.CoreV1().Pods("default").Create(c.ctx(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "probe-" + name},
			Spec:       corev1.PodSpec{PriorityClassName: name, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
		}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "PriorityClass %s known to admission", name)
	return name
}

// attach plays the attach/detach controller: a VolumeAttachment of pv on
// node.
func (c *cluster) attach(pv, node string) string {
	name := "va-" + pv
	_, err := c.cs.StorageV1().VolumeAttachments().Create(c.ctx(), &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: inmemory.DefaultCSIDriverName,
			NodeName: node,
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)},
		},
	}, metav1.CreateOptions{})
	require.NoError(c.t, err)
	return name
}

// setVolumesAttached plays the kubelet reporting the volumes attached to
// its node.
func (c *cluster) setVolumesAttached(node string, names ...string) {
	n, err := c.cs.CoreV1().Nodes().Get(c.ctx(), node, metav1.GetOptions{})
	require.NoError(c.t, err)
	n.Status.VolumesAttached = nil
	for _, name := range names {
		n.Status.VolumesAttached = append(n.Status.VolumesAttached, corev1.AttachedVolume{Name: corev1.UniqueVolumeName(name), DevicePath: "/dev/x"})
	}
	_, err = c.cs.CoreV1().Nodes().UpdateStatus(c.ctx(), n, metav1.UpdateOptions{})
	require.NoError(c.t, err)
}

func (c *cluster) terminating(ns, name string) bool {
	p, err := c.cs.CoreV1().Pods(ns).Get(c.ctx(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	return p.DeletionTimestamp != nil
}

// inmemoryVolumeIDs maps volumes with the inmemory driver's GetVolumeIDs
// (in-process), as the Machine controller does through the Driver API.
func inmemoryVolumeIDs(d *inmemory.Driver) VolumeIDsFunc {
	return func(ctx context.Context, pvs []*corev1.PersistentVolume) (map[string]string, error) {
		req := &driverv1alpha1.GetVolumeIDsRequest{}
		for _, pv := range pvs {
			spec, err := json.Marshal(pv.Spec)
			if err != nil {
				return nil, err
			}
			req.Volumes = append(req.Volumes, &driverv1alpha1.PersistentVolume{Name: pv.Name, Spec: spec})
		}
		resp, err := d.GetVolumeIDs(ctx, req)
		if err != nil {
			return nil, err
		}
		ids := map[string]string{}
		for _, v := range resp.GetVolumeIds() {
			ids[v.GetPersistentVolumeName()] = v.GetVolumeId()
		}
		return ids, nil
	}
}

func hostPath(path string) corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}
}

func csiVolume(handle string) corev1.PersistentVolumeSource {
	return corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: inmemory.DefaultCSIDriverName, VolumeHandle: handle}}
}

func TestVolumeDrain(t *testing.T) {
	c := startCluster(t)
	d := New(c.cs)
	ids := inmemoryVolumeIDs(inmemory.New(inmemory.Options{}))

	t.Run("pods with volumes one at a time by priority, each waiting for its detach", func(t *testing.T) {
		c.t = t
		const ns, node = "serial", "node-serial"
		c.namespace(ns)
		c.node(node)
		c.pod(ns, "plain-1", node, ownedBy("ReplicaSet", "rs"))
		c.pod(ns, "plain-2", node, ownedBy("ReplicaSet", "rs"))
		c.volumePod(ns, "low", node, 10, csiVolume("disk-low"))
		c.volumePod(ns, "high", node, 100, hostPath("/inmemory/disk-high"))
		c.attach("pv-serial-low", node)
		c.setVolumesAttached(node, "kubernetes.io/host-path//inmemory/disk-high")
		t0 := time.Now()
		opts := Options{VolumeIDs: ids, DetachTimeout: 2 * time.Minute, Now: t0}

		// The pods without volumes all go at once; of the two with
		// volumes only the one of higher priority.
		res, err := d.Pass(c.ctx(), node, opts)
		require.NoError(t, err)
		assert.Equal(t, 3, res.Evicted)
		assert.Equal(t, 4, res.Remaining)
		require.NotNil(t, res.Waiting)
		assert.Equal(t, "serial/high", res.Waiting.Pod)
		assert.Equal(t, []string{"pv-serial-high"}, res.Waiting.Volumes)
		assert.Equal(t, []string{"/inmemory/disk-high"}, res.Waiting.VolumeIDs, "the in-tree volume's ID comes from the driver")
		assert.True(t, c.terminating(ns, "plain-1"))
		assert.True(t, c.terminating(ns, "high"))
		assert.False(t, c.terminating(ns, "low"), "the next pod with volumes waits for the detach")
		assert.False(t, res.Drained())

		// The pods stop; the in-tree volume is still attached.
		c.finalizeTerminating(ns)
		opts.Wait, opts.Now = res.Waiting, t0.Add(10*time.Second)
		res, err = d.Pass(c.ctx(), node, opts)
		require.NoError(t, err)
		assert.Equal(t, 0, res.Evicted)
		assert.Equal(t, 1, res.Remaining)
		assert.Equal(t, 1, res.AttachedVolumes)
		require.NotNil(t, res.Waiting)
		assert.Equal(t, "serial/high", res.Waiting.Pod)
		assert.Contains(t, res.Summary(), "waiting for 1 volumes of pod serial/high to detach")
		assert.False(t, c.terminating(ns, "low"))

		// Detached: the next pod is evicted and waited for.
		c.setVolumesAttached(node)
		opts.Wait, opts.Now = res.Waiting, t0.Add(20*time.Second)
		res, err = d.Pass(c.ctx(), node, opts)
		require.NoError(t, err)
		assert.Equal(t, 1, res.Evicted)
		require.NotNil(t, res.Waiting)
		assert.Equal(t, "serial/low", res.Waiting.Pod)
		assert.Equal(t, t0.Add(20*time.Second).Truncate(time.Second), res.Waiting.Since.Time.Truncate(time.Second))
		assert.Equal(t, []string{"disk-low"}, res.Waiting.VolumeIDs, "the driver maps its CSI volume too; here its VolumeAttachment tells the detach")
		assert.True(t, c.terminating(ns, "low"))

		// Its CSI volume stays attached (VolumeAttachment) past the detach
		// timeout: the drain gives up waiting and is done.
		c.finalizeTerminating(ns)
		opts.Wait, opts.Now = res.Waiting, t0.Add(time.Minute)
		res, err = d.Pass(c.ctx(), node, opts)
		require.NoError(t, err)
		assert.Equal(t, 1, res.AttachedVolumes)
		require.NotNil(t, res.Waiting)
		opts.Wait, opts.Now = res.Waiting, t0.Add(20*time.Second+2*time.Minute+time.Second)
		res, err = d.Pass(c.ctx(), node, opts)
		require.NoError(t, err)
		assert.Nil(t, res.Waiting)
		assert.Equal(t, []string{"serial/low"}, res.DetachTimedOut)
		assert.True(t, res.Drained())
		_, err = c.cs.StorageV1().VolumeAttachments().Get(c.ctx(), "va-pv-serial-low", metav1.GetOptions{})
		assert.NoError(t, err, "a graceful drain leaves VolumeAttachments to the attach/detach controller")
	})

	t.Run("without GetVolumeIDs only VolumeAttachments tell a detach", func(t *testing.T) {
		c.t = t
		const ns, node = "novolids", "node-novolids"
		c.namespace(ns)
		c.node(node)
		c.volumePod(ns, "a", node, 0, hostPath("/inmemory/disk-a"))
		c.volumePod(ns, "b", node, 0, csiVolume("disk-b"))
		c.setVolumesAttached(node, "kubernetes.io/host-path//inmemory/disk-a")
		va := c.attach("pv-novolids-b", node)

		res, err := d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		require.NotNil(t, res.Waiting)
		assert.Equal(t, "novolids/a", res.Waiting.Pod, "same priority: by name")
		assert.Empty(t, res.Waiting.VolumeIDs)
		c.finalizeTerminating(ns)
		// a's volume is in volumesAttached, but nothing maps it: the wait
		// ends, and b is evicted and waited for by its VolumeAttachment.
		res, err = d.Pass(c.ctx(), node, Options{Wait: res.Waiting})
		require.NoError(t, err)
		require.NotNil(t, res.Waiting)
		assert.Equal(t, "novolids/b", res.Waiting.Pod)
		c.finalizeTerminating(ns)
		res, err = d.Pass(c.ctx(), node, Options{Wait: res.Waiting})
		require.NoError(t, err)
		assert.Equal(t, 1, res.AttachedVolumes)
		require.NoError(t, c.cs.StorageV1().VolumeAttachments().Delete(c.ctx(), va, metav1.DeleteOptions{}))
		res, err = d.Pass(c.ctx(), node, Options{Wait: res.Waiting})
		require.NoError(t, err)
		assert.True(t, res.Drained())
		assert.Empty(t, res.DetachTimedOut)
	})

	t.Run("a PodDisruptionBudget holds the serial drain without a wait", func(t *testing.T) {
		c.t = t
		const ns, node = "volpdb", "node-volpdb"
		c.namespace(ns)
		c.node(node)
		c.volumePod(ns, "db", node, 0, csiVolume("disk-db"))
		p, err := c.cs.CoreV1().Pods(ns).Get(c.ctx(), "db", metav1.GetOptions{})
		require.NoError(t, err)
		p.Labels = map[string]string{"app": "db"}
		_, err = c.cs.CoreV1().Pods(ns).Update(c.ctx(), p, metav1.UpdateOptions{})
		require.NoError(t, err)
		c.pdb(ns, "db", map[string]string{"app": "db"})
		require.Eventually(t, func() bool {
			res, err := d.Pass(c.ctx(), node, Options{})
			return err == nil && len(res.Blocked) == 1
		}, 10*time.Second, 50*time.Millisecond, "the budget refuses the eviction")
		res, err := d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.Nil(t, res.Waiting)
		assert.Equal(t, []string{"volpdb/db"}, res.Blocked)
		assert.Equal(t, 1, res.Remaining)
		assert.False(t, c.terminating(ns, "db"))
	})
}
