package cachetrim_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/cachetrim"
)

// kubeletNode is a Node as a kubelet reports it: 50 images (the kubelet's
// default nodeStatusMaxImages), nodeInfo, daemon endpoints, the managed
// fields of the kubelet and of two controllers.
func kubeletNode() *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   "ip-10-250-1-17.eu-west-1.compute.internal",
			Labels: map[string]string{"kubernetes.io/hostname": "ip-10-250-1-17", "node.kubernetes.io/instance-type": "m5.large", "topology.kubernetes.io/zone": "eu-west-1a"},
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:lastHeartbeatTime":{},"f:message":{},"f:reason":{},"f:status":{},"f:type":{}}},"f:images":{},"f:nodeInfo":{"f:bootID":{}}}}`)},
				{Manager: "machina-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:metadata":{"f:finalizers":{".":{},"v:\"node.machine.sapcloud.io/machine-controller\"":{}}}}`)},
			},
		},
		Spec: corev1.NodeSpec{ProviderID: "aws:///eu-west-1a/i-0123456789abcdef0"},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("7941Mi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1920m"), corev1.ResourceMemory: resource.MustParse("6Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Phase:       corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
			},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.250.1.17"}, {Type: corev1.NodeHostName, Address: "ip-10-250-1-17"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo:        corev1.NodeSystemInfo{MachineID: "ec2c3f1c6d0b4a8e9f7a6b5c4d3e2f10", SystemUUID: "ec2c3f1c-6d0b-4a8e-9f7a-6b5c4d3e2f10", BootID: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", KernelVersion: "6.6.62-cloud-amd64", OSImage: "Garden Linux 1592.4", ContainerRuntimeVersion: "containerd://1.7.24", KubeletVersion: "v1.33.4", OperatingSystem: "linux", Architecture: "amd64"},
			VolumesInUse:    []corev1.UniqueVolumeName{"kubernetes.io/csi/ebs.csi.aws.com^vol-0a1b2c3d4e5f60718"},
			VolumesAttached: []corev1.AttachedVolume{{Name: "kubernetes.io/csi/ebs.csi.aws.com^vol-0a1b2c3d4e5f60718", DevicePath: ""}},
		},
	}
	for i := range 50 {
		n.Status.Images = append(n.Status.Images, corev1.ContainerImage{
			Names: []string{
				fmt.Sprintf("europe-docker.pkg.dev/gardener-project/releases/gardener/image-%02d@sha256:%064x", i, i*7919),
				fmt.Sprintf("europe-docker.pkg.dev/gardener-project/releases/gardener/image-%02d:v1.%d.0", i, i),
			},
			SizeBytes: int64(10_000_000 + i*123_457),
		})
	}
	return n
}

func TestTransformKeepsWhatControllersRead(t *testing.T) {
	in := kubeletNode()
	want := in.DeepCopy()
	before, err := json.Marshal(in)
	require.NoError(t, err)

	out, err := cachetrim.Transform()(in)
	require.NoError(t, err)
	got := out.(*corev1.Node)
	after, err := json.Marshal(got)
	require.NoError(t, err)
	t.Logf("a kubelet's Node: %d bytes of JSON, %d once trimmed", len(before), len(after))

	assert.Nil(t, got.ManagedFields)
	assert.Nil(t, got.Status.Images)
	assert.Zero(t, got.Status.NodeInfo)
	assert.Zero(t, got.Status.DaemonEndpoints)
	assert.Nil(t, got.Status.VolumesInUse)
	// What the controllers read is all there.
	assert.Equal(t, want.ObjectMeta.Labels, got.Labels)
	assert.Equal(t, want.Spec, got.Spec)
	assert.Equal(t, want.Status.Conditions, got.Status.Conditions)
	assert.Equal(t, want.Status.Capacity, got.Status.Capacity)
	assert.Equal(t, want.Status.Allocatable, got.Status.Allocatable)
	assert.Equal(t, want.Status.Addresses, got.Status.Addresses)
	assert.Equal(t, want.Status.Phase, got.Status.Phase)
	assert.Equal(t, want.Status.VolumesAttached, got.Status.VolumesAttached)
	assert.Less(t, len(after)*4, len(before), "the trimmed Node is not a quarter of the kubelet's")

	// A second pass changes nothing (an informer may transform an object
	// it already holds).
	again, err := cachetrim.Transform()(got.DeepCopy())
	require.NoError(t, err)
	assert.Equal(t, got, again)
}

func TestTransformOtherObjectsLoseManagedFieldsOnly(t *testing.T) {
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "m", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "machina-manager"}}},
		Status:     v1alpha1.MachineStatus{CurrentStatus: v1alpha1.CurrentStatus{Phase: v1alpha1.MachineRunning}},
	}
	out, err := cachetrim.Transform()(m)
	require.NoError(t, err)
	got := out.(*v1alpha1.Machine)
	assert.Nil(t, got.ManagedFields)
	assert.Equal(t, v1alpha1.MachineRunning, got.Status.CurrentStatus.Phase)

	// What is not an object passes as it is.
	tomb := toolscache.DeletedFinalStateUnknown{Key: "n", Obj: kubeletNode()}
	out, err = cachetrim.Transform()(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, out)
}
