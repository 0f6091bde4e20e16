package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// testDrain: a node with pods of every kind the drain treats differently:
// plain pods under a budget that allows one disruption, a pod under a budget
// that allows none, pods with claims (one bound to an attached volume, one
// unbound) of different priorities, a DaemonSet pod and a mirror pod.
func (p *plugin) testDrain(t *testing.T) {
	const ns, node = "drain", "drain-node"
	p.namespace(t, ns)
	p.node(t, node, corev1.ConditionTrue, time.Now())

	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
			},
		},
	}
	require.NoError(t, p.c.Create(t.Context(), ds))

	// Pods get their priority from a PriorityClass (the API server's
	// Priority admission refuses one set by hand).
	require.NoError(t, p.c.Create(t.Context(), &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "drain-high"}, Value: 1000}))
	pod := func(name string, labels map[string]string, priorityClass string, claim string, mutate ...func(*corev1.Pod)) {
		t.Helper()
		po := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec: corev1.PodSpec{
				NodeName:          node,
				PriorityClassName: priorityClass,
				Containers:        []corev1.Container{{Name: "c", Image: "example.invalid/c"}},
			},
		}
		if claim != "" {
			po.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
			}}}
		}
		for _, m := range mutate {
			m(po)
		}
		require.NoError(t, p.c.Create(t.Context(), po))
	}
	claim := func(name, volume string) {
		t.Helper()
		require.NoError(t, p.c.Create(t.Context(), &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				VolumeName:  volume,
			},
		}))
	}

	pod("web-1", map[string]string{"app": "web"}, "", "")
	pod("web-2", map[string]string{"app": "web"}, "", "")
	p.budget(t, ns, "web", map[string]string{"app": "web"}, 1)
	pod("pay-1", map[string]string{"app": "pay"}, "", "")
	p.budget(t, ns, "pay", map[string]string{"app": "pay"}, 0)

	claim("data-db-0", "pv-db-0")
	pod("db-0", nil, "drain-high", "data-db-0")
	require.NoError(t, p.c.Create(t.Context(), &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "va-db-0"},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "csi.example.invalid", NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-db-0")},
		},
	}))
	claim("data-cache-0", "")
	pod("cache-0", nil, "", "data-cache-0")

	pod("agent-x", labels, "", "", func(po *corev1.Pod) {
		po.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}
	})
	pod("kube-proxy-drain-node", nil, "", "", func(po *corev1.Pod) {
		po.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	})
	// A pod on another node is not part of the plan.
	pod("elsewhere", nil, "", "", func(po *corev1.Pod) { po.Spec.NodeName = "other-node" })

	out, err := p.run(t, time.Now(), ns, "drain", "--dry-run", node)
	require.NoError(t, err)
	golden(t, "drain", out)

	_, err = p.run(t, time.Now(), ns, "drain", node)
	require.ErrorContains(t, err, "drain only runs with --dry-run")
	_, err = p.run(t, time.Now(), ns, "drain", "--dry-run", "no-such-node")
	require.EqualError(t, err, `nodes "no-such-node" not found`)
}
