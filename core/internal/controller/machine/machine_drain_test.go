package machine

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// volumePod creates a PersistentVolume with src, a claim bound to it and a
// Running pod on node that mounts it.
func volumePod(t *testing.T, w *world, c client.Client, name, node string, src corev1.PersistentVolumeSource) string {
	t.Helper()
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-" + w.ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: src,
		},
	}
	require.NoError(t, c.Create(w.ctx, pv))
	require.NoError(t, c.Create(w.ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			VolumeName:  pv.Name,
		},
	}))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: name, UID: "00000000-0000-0000-0000-000000000002", Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
			}}},
		},
	}
	require.NoError(t, c.Create(w.ctx, pod))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	require.NoError(t, c.Status().Update(w.ctx, pod))
	return pv.Name
}

func attachVolume(t *testing.T, w *world, c client.Client, pv, node string) string {
	t.Helper()
	name := "va-" + pv
	require.NoError(t, c.Create(w.ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: inmemory.DefaultCSIDriverName, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)},
		},
	}))
	return name
}

// setVolumesAttached plays the kubelet reporting the volumes attached to
// its node.
func setVolumesAttached(t *testing.T, w *world, c client.Client, node string, names ...string) {
	t.Helper()
	require.Eventually(t, func() bool {
		n := &corev1.Node{}
		if err := c.Get(w.ctx, client.ObjectKey{Name: node}, n); err != nil {
			return false
		}
		n.Status.VolumesAttached = nil
		for _, name := range names {
			n.Status.VolumesAttached = append(n.Status.VolumesAttached, corev1.AttachedVolume{Name: corev1.UniqueVolumeName(name), DevicePath: "/dev/x"})
		}
		return c.Status().Update(w.ctx, n) == nil
	}, waitLong, 20*time.Millisecond)
}

func podTerminating(t *testing.T, w *world, c client.Client, name string) bool {
	t.Helper()
	p := &corev1.Pod{}
	if err := c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, p); err != nil {
		return true // gone counts as evicted
	}
	return p.DeletionTimestamp != nil
}

// The deletion drains the pods with volumes one at a time: the CSI one
// ("cache", by name first) waits for its VolumeAttachment to go, the
// in-tree one ("db", under /inmemory/, mapped by the driver's GetVolumeIDs)
// for node.status.volumesAttached, until the detach timeout. The wait is on
// the Machine (annotation and Drained condition) while it lasts.
func testDrainWaitsForDetach(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.opts.PVDetachTimeout = 4 * time.Second
	w.opts.DrainTimeout = 10 * time.Minute
	w.class("small", nil)
	w.start()
	w.machine("m1", "small")
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	c := env.Client
	runningPod(t, w.ctx, c, w.ns, "web", "m1", nil)
	cachePV := volumePod(t, w, c, "cache", "m1", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: inmemory.DefaultCSIDriverName, VolumeHandle: "disk-cache"}})
	volumePod(t, w, c, "db", "m1", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/inmemory/" + w.ns + "-db"}})
	va := attachVolume(t, w, c, cachePV, "m1")
	setVolumesAttached(t, w, c, "m1", "kubernetes.io/host-path//inmemory/"+w.ns+"-db")

	w.delete("m1")
	m := w.eventually("m1", waitLong, "a wait for the CSI volume", func(m *v1alpha1.Machine) bool {
		c := drainedCondition(m)
		return c != nil && strings.Contains(c.Message, "waiting for 1 volumes of pod "+w.ns+"/cache to detach")
	})
	assert.Equal(t, "Draining", drainedCondition(m).Reason)
	assert.Contains(t, m.Annotations[VolumeWaitAnnotation], `"pod":"`+w.ns+`/cache"`)
	assert.True(t, podTerminating(t, w, c, "web"), "pods without volumes go at once")
	assert.False(t, podTerminating(t, w, c, "db"), "the next pod with volumes waits for the detach")

	// The attach/detach controller detaches the volume.
	require.NoError(t, c.Delete(w.ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: va}}))
	m = w.eventually("m1", waitLong, "a wait for the in-tree volume", func(m *v1alpha1.Machine) bool {
		c := drainedCondition(m)
		return c != nil && strings.Contains(c.Message, "waiting for 1 volumes of pod "+w.ns+"/db to detach")
	})
	assert.Contains(t, m.Annotations[VolumeWaitAnnotation], "/inmemory/"+w.ns+"-db", "the driver mapped the in-tree volume")
	assert.Equal(t, v1alpha1.DeletionStepDrain, m.Status.DeletionStep)
	assert.Zero(t, w.mem.Calls(inmemory.MethodDeleteMachine), "no VM deletion while a volume is attached")

	// The in-tree volume never detaches: after the detach timeout the
	// drain goes on and completes.
	w.waitGone("m1", waitLong)
	note := w.waitEvent("m1", corev1.EventTypeWarning, reasonDetachTimeout)
	assert.Contains(t, note, w.ns+"/db")
	w.rec.assertStepsFollow(t, "m1", allSteps, "Drain")
	assert.Zero(t, drainObserved(t, w.ns, "forced").GetSampleCount(), "not forced")
	drained := drainObserved(t, w.ns, "drained")
	assert.Equal(t, uint64(1), drained.GetSampleCount(), "the drain is observed once")
	assert.GreaterOrEqual(t, drained.GetSampleSum(), 4.0, "the drain lasted at least the detach timeout")
	assert.Zero(t, drainObserved(t, w.ns, "forced").GetSampleCount())
}

// drainObserved reads machina_machine_drain_duration_seconds of the
// namespace's machines without a deployment, for the result.
func drainObserved(t *testing.T, ns, result string) *dto.Histogram {
	t.Helper()
	m := &dto.Metric{}
	require.NoError(t, drainDuration.WithLabelValues(ns, "", result).(prometheus.Histogram).Write(m))
	return m.GetHistogram()
}

// A drain waiting for a detach is forced when the drain timeout passes: the
// node's VolumeAttachments are deleted.
func testDrainForcedWhileWaiting(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.opts.PVDetachTimeout = 10 * time.Minute
	w.class("small", nil)
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineDrainTimeout: &v1alpha1.Duration{Duration: 4 * time.Second}}
	})
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	c := env.Client
	pv := volumePod(t, w, c, "db", "m1", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: inmemory.DefaultCSIDriverName, VolumeHandle: "disk-db"}})
	va := attachVolume(t, w, c, pv, "m1")

	w.delete("m1")
	w.eventually("m1", waitLong, "a wait for the volume", func(m *v1alpha1.Machine) bool {
		return m != nil && m.Annotations[VolumeWaitAnnotation] != ""
	})
	w.waitGone("m1", waitLong)
	forced := []string{"GetVMStatus", "Drain", "DeleteVolumeAttachments", "DeleteVM", "DeleteNode", "RemoveFinalizer"}
	w.rec.assertStepsFollow(t, "m1", forced, "Drain")
	assert.True(t, gone(t, w, c, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: va}}))
	assert.Contains(t, w.waitEvent("m1", corev1.EventTypeWarning, reasonForceDrain), "the drain timeout of 4s has passed")
	assert.Equal(t, uint64(1), drainObserved(t, w.ns, "forced").GetSampleCount(), "the forced drain is observed once")
	assert.Zero(t, drainObserved(t, w.ns, "drained").GetSampleCount())
}
