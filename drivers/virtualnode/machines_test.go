package virtualnode

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

func TestCreateMachineRegistersANodeThatBecomesReadyAfterBootDelay(t *testing.T) {
	d := startDriver(t, Options{HeartbeatInterval: time.Hour}) // only the boot timer can make it Ready
	t.Cleanup(func() { removeNode(t, "boot-1") })
	req := createReq("boot-1", "small", `{"capacity":{"cpu":"4","memory":"8Gi"},"bootDelay":"4s","image":"ignored"}`)
	req.Machine.NodeTemplate = &driverv1alpha1.NodeTemplate{
		Labels:      map[string]string{"pool": "blue"},
		Annotations: map[string]string{"team": "infra"},
		Taints:      []*driverv1alpha1.Taint{{Key: "dedicated", Value: "infra", Effect: "NoSchedule"}},
	}
	req.MachineClass.NodeTemplate = &driverv1alpha1.ClassNodeTemplate{
		Capacity: map[string]string{"cpu": "2", "pods": "50"}, InstanceType: "m5.large", Zone: "zone-a",
	}

	resp, err := d.CreateMachine(context.Background(), req)
	require.NoError(t, err)
	assert.Regexp(t, `^virtualnode://default/boot-1/[0-9a-f]{8}$`, resp.GetProviderId())
	assert.Equal(t, "boot-1", resp.GetNodeName())
	require.Len(t, resp.GetAddresses(), 2)

	node := getNode(t, "boot-1")
	assert.Equal(t, resp.GetProviderId(), node.Spec.ProviderID)
	assert.Equal(t, "boot-1", node.Labels[corev1.LabelHostname])
	assert.Equal(t, "small", node.Labels[LabelClass])
	assert.Equal(t, "blue", node.Labels["pool"])
	assert.Equal(t, "m5.large", node.Labels[corev1.LabelInstanceTypeStable])
	assert.Equal(t, "zone-a", node.Labels[corev1.LabelTopologyZone])
	assert.Equal(t, "default/boot-1", node.Annotations[AnnotationMachine])
	assert.Equal(t, "infra", node.Annotations["team"])
	// The API server's admission adds node.kubernetes.io/not-ready as well.
	assert.Contains(t, node.Spec.Taints, corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule})
	// The provider spec wins over the class's node template, per resource.
	for name, want := range map[corev1.ResourceName]string{"cpu": "4", "memory": "8Gi", "pods": "50"} {
		assert.True(t, resource.MustParse(want).Equal(node.Status.Capacity[name]), "capacity %s", name)
		assert.True(t, resource.MustParse(want).Equal(node.Status.Allocatable[name]), "allocatable %s", name)
	}
	assert.Equal(t, resp.GetAddresses()[0].GetAddress(), node.Status.Addresses[0].Address)
	assert.Equal(t, corev1.NodeInternalIP, node.Status.Addresses[0].Type)

	readyAt, err := time.Parse(time.RFC3339Nano, node.Annotations[AnnotationReadyAfter])
	require.NoError(t, err)
	assert.WithinDuration(t, node.CreationTimestamp.Add(4*time.Second), readyAt, 2*time.Second)
	if time.Now().Before(readyAt) { // true unless the machine stalled for seconds
		ready := condition(getNode(t, "boot-1"), corev1.NodeReady)
		require.NotNil(t, ready)
		assert.Equal(t, corev1.ConditionFalse, ready.Status)
		assert.Equal(t, reasonBooting, ready.Reason)
	}

	node = eventuallyCondition(t, "boot-1", corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")
	ready := condition(node, corev1.NodeReady)
	// Condition times have second precision.
	assert.False(t, ready.LastTransitionTime.Time.Before(readyAt.Truncate(time.Second)), "Ready before the boot ended")
	for _, typ := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeNetworkUnavailable} {
		c := condition(node, typ)
		require.NotNil(t, c, typ)
		assert.Equal(t, corev1.ConditionFalse, c.Status, typ)
	}

	lease, err := testClient.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "boot-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "boot-1", *lease.Spec.HolderIdentity)
	assert.Equal(t, node.UID, lease.OwnerReferences[0].UID)
}

func TestCreateMachineIsIdempotent(t *testing.T) {
	d := New(Options{Target: testConfig, Logger: quiet}) // no heartbeat needed
	t.Cleanup(func() { removeNode(t, "idem-1") })
	ctx := context.Background()
	first, err := d.CreateMachine(ctx, createReq("idem-1", "small", `{"capacity":{"cpu":"2","memory":"4Gi"}}`))
	require.NoError(t, err)
	uid := getNode(t, "idem-1").UID

	again, err := d.CreateMachine(ctx, createReq("idem-1", "small", `{ "capacity": {"memory":"4Gi","cpu":"2"} }`))
	require.NoError(t, err)
	assert.Equal(t, first.GetProviderId(), again.GetProviderId())
	assert.Equal(t, first.GetNodeName(), again.GetNodeName())
	assert.Equal(t, uid, getNode(t, "idem-1").UID, "the Node must not be replaced")

	st, err := d.GetMachineStatus(ctx, statusReq(machine("idem-1")))
	require.NoError(t, err)
	assert.Equal(t, first.GetProviderId(), st.GetProviderId())
	assert.Equal(t, "idem-1", st.GetNodeName())
	assert.Len(t, st.GetAddresses(), 2)
}

func TestCreateMachineAlreadyExists(t *testing.T) {
	d := New(Options{Target: testConfig, Logger: quiet})
	ctx := context.Background()
	t.Cleanup(func() { removeNode(t, "taken-1"); removeNode(t, "foreign-1") })
	_, err := d.CreateMachine(ctx, createReq("taken-1", "small", `{"capacity":{"cpu":"2"}}`))
	require.NoError(t, err)

	for name, req := range map[string]*driverv1alpha1.CreateMachineRequest{
		"other provider spec": createReq("taken-1", "small", `{"capacity":{"cpu":"8"}}`),
		// Node names are cluster-wide: a Machine of that name in another
		// namespace is refused, never given this Node (§6.1.3).
		"other namespace": {
			Machine:      &driverv1alpha1.Machine{Name: "taken-1", Namespace: "elsewhere"},
			MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "elsewhere", ProviderSpec: []byte(`{"capacity":{"cpu":"2"}}`)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := d.CreateMachine(ctx, req)
			requireCode(t, codes.AlreadyExists, err)
		})
	}

	// A class of another namespace than the machine's is malformed (§4.9).
	_, err = d.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{
		Machine:      machine("taken-1"),
		MachineClass: &driverv1alpha1.MachineClass{Name: "small", Namespace: "elsewhere", ProviderSpec: []byte(`{"capacity":{"cpu":"2"}}`)},
	})
	requireCode(t, codes.InvalidArgument, err)

	// The class name is not part of the key: the same provider spec under
	// another class name gets the Node it has (§6.1.3, §11.8).
	again, err := d.CreateMachine(ctx, createReq("taken-1", "large", `{"capacity":{"cpu":"2"}}`))
	require.NoError(t, err)
	assert.Equal(t, getNode(t, "taken-1").Spec.ProviderID, again.GetProviderId())

	// A Node this driver did not create is never adopted.
	_, err = testClient.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "foreign-1"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = d.CreateMachine(ctx, createReq("foreign-1", "small", "{}"))
	requireCode(t, codes.AlreadyExists, err)
	_, err = d.GetMachineStatus(ctx, statusReq(machine("foreign-1")))
	requireCode(t, codes.NotFound, err)
	_, err = d.DeleteMachine(ctx, deleteReq(machine("foreign-1")))
	require.NoError(t, err)
	getNode(t, "foreign-1") // still there: not ours to delete
}

func TestListMachinesByClass(t *testing.T) {
	d := New(Options{Target: testConfig, Logger: quiet})
	ctx := context.Background()
	longClass := "a-very-long-machine-class-name-that-does-not-fit-into-a-label-value-at-all.example.com"
	for _, m := range []struct{ name, class string }{
		{"list-a", "list-small"}, {"list-b", "list-large"}, {"list-c", "list-small"}, {"list-d", longClass},
	} {
		t.Cleanup(func() { removeNode(t, m.name) })
		_, err := d.CreateMachine(ctx, createReq(m.name, m.class, "{}"))
		require.NoError(t, err)
	}
	names := func(className string) []string {
		resp, err := d.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: class(className, "{}")})
		require.NoError(t, err)
		var out []string
		for _, m := range resp.GetMachines() {
			assert.Equal(t, getNode(t, m.GetMachineName()).Spec.ProviderID, m.GetProviderId())
			out = append(out, m.GetMachineName())
		}
		return out
	}
	assert.Equal(t, []string{"list-a", "list-c"}, names("list-small"))
	assert.Equal(t, []string{"list-b"}, names("list-large"))
	assert.Equal(t, []string{"list-d"}, names(longClass))
	assert.Empty(t, names("list-none"))

	// A class of the same name in another namespace is another class.
	t.Cleanup(func() { removeNode(t, "list-e") })
	elsewhere := &driverv1alpha1.MachineClass{Name: "list-small", Namespace: "elsewhere", ProviderSpec: []byte("{}")}
	_, err := d.CreateMachine(ctx, &driverv1alpha1.CreateMachineRequest{
		Machine: &driverv1alpha1.Machine{Name: "list-e", Namespace: "elsewhere"}, MachineClass: elsewhere,
	})
	require.NoError(t, err)
	resp, err := d.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: elsewhere})
	require.NoError(t, err)
	require.Len(t, resp.GetMachines(), 1)
	assert.Regexp(t, `^virtualnode://elsewhere/list-e/`, resp.GetMachines()[0].GetProviderId())
	assert.Equal(t, []string{"list-a", "list-c"}, names("list-small"))
}

func TestDeleteMachine(t *testing.T) {
	d := New(Options{Target: testConfig, Logger: quiet})
	ctx := context.Background()
	t.Cleanup(func() { removeNode(t, "del-1") })

	_, err := d.DeleteMachine(ctx, deleteReq(machine("del-never")))
	require.NoError(t, err, "deleting a VM that never existed is OK")

	created, err := d.CreateMachine(ctx, createReq("del-1", "small", "{}"))
	require.NoError(t, err)

	// A stale provider ID names a VM that is gone: OK, and this Node stays.
	stale := machine("del-1")
	stale.ProviderId = "virtualnode://default/del-1-old"
	_, err = d.GetMachineStatus(ctx, statusReq(stale))
	requireCode(t, codes.NotFound, err)
	_, err = d.DeleteMachine(ctx, deleteReq(stale))
	require.NoError(t, err)
	getNode(t, "del-1")

	m := machine("del-1")
	m.ProviderId = created.GetProviderId()
	_, err = d.DeleteMachine(ctx, deleteReq(m))
	require.NoError(t, err)
	_, err = testClient.CoreV1().Nodes().Get(ctx, "del-1", metav1.GetOptions{})
	require.Error(t, err, "the Node must be gone")
	_, err = d.GetMachineStatus(ctx, statusReq(m))
	requireCode(t, codes.NotFound, err)
	_, err = d.DeleteMachine(ctx, deleteReq(m))
	require.NoError(t, err, "deleting twice is OK")

	recreated, err := d.CreateMachine(ctx, createReq("del-1", "small", "{}"))
	require.NoError(t, err)
	assert.NotEqual(t, created.GetProviderId(), recreated.GetProviderId(), "a provider ID is never reused")
	_, err = d.GetMachineStatus(ctx, statusReq(m))
	requireCode(t, codes.NotFound, err)
}

func TestDeleteMachineRespectsTheCoreNodeFinalizer(t *testing.T) {
	const finalizer = "node.machine.sapcloud.io/machine-controller"
	d := New(Options{Target: testConfig, Logger: quiet})
	ctx := context.Background()
	t.Cleanup(func() { removeNode(t, "fin-1") })

	_, err := d.CreateMachine(ctx, createReq("fin-1", "small", "{}"))
	require.NoError(t, err)
	node := getNode(t, "fin-1")
	node.Finalizers = append(node.Finalizers, finalizer)
	_, err = testClient.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)

	_, err = d.DeleteMachine(ctx, deleteReq(machine("fin-1")))
	require.NoError(t, err)
	node = getNode(t, "fin-1")
	assert.NotNil(t, node.DeletionTimestamp, "the Node is being deleted")
	assert.Equal(t, []string{finalizer}, node.Finalizers, "the core's finalizer stays")

	// A Node being deleted is a VM that is gone.
	_, err = d.GetMachineStatus(ctx, statusReq(machine("fin-1")))
	requireCode(t, codes.NotFound, err)
	list, err := d.ListMachines(ctx, &driverv1alpha1.ListMachinesRequest{MachineClass: class("small", "{}")})
	require.NoError(t, err)
	for _, lm := range list.GetMachines() {
		assert.NotEqual(t, "fin-1", lm.GetMachineName())
	}
	_, err = d.DeleteMachine(ctx, deleteReq(machine("fin-1")))
	require.NoError(t, err)
	// A new VM of that name must wait until the old Node is gone, whatever
	// its class.
	_, err = d.CreateMachine(ctx, createReq("fin-1", "small", "{}"))
	requireCode(t, codes.Aborted, err)
	_, err = d.CreateMachine(ctx, createReq("fin-1", "large", `{"bootDelay":"1s"}`))
	requireCode(t, codes.Aborted, err)
}

func TestKubeconfigFromTheRequestSecret(t *testing.T) {
	d := New(Options{Logger: quiet}) // no default target
	ctx := context.Background()
	t.Cleanup(func() { removeNode(t, "secret-1") })

	_, err := d.CreateMachine(ctx, createReq("secret-1", "small", "{}"))
	requireCode(t, codes.FailedPrecondition, err)

	req := createReq("secret-1", "small", "{}")
	req.Secrets = map[string][]byte{SecretKubeconfig: testEnv.KubeConfig}
	resp, err := d.CreateMachine(ctx, req)
	require.NoError(t, err)
	assert.Regexp(t, `^virtualnode://default/secret-1/`, resp.GetProviderId())
	getNode(t, "secret-1")

	st := statusReq(machine("secret-1"))
	st.Secrets = req.Secrets
	_, err = d.GetMachineStatus(ctx, st)
	require.NoError(t, err)
	assert.Len(t, d.clusters.all(), 1, "one client per kubeconfig")

	const canary = "CANARY-TOKEN-4711"
	bad := createReq("secret-2", "small", "{}")
	bad.Secrets = map[string][]byte{SecretKubeconfig: []byte("apiVersion: v1\nusers: [" + canary)}
	_, err = d.CreateMachine(ctx, bad)
	requireCode(t, codes.InvalidArgument, err)
	assert.NotContains(t, err.Error(), canary)
}

func TestInvalidProviderSpec(t *testing.T) {
	d := New(Options{Target: testConfig, Logger: quiet})
	ctx := context.Background()
	for spec, want := range map[string]string{
		`[1]`:                         "must be a JSON object",
		`{"bootDelay":"later"}`:       "bootDelay",
		`{"capacity":{"cpu":"lots"}}`: "capacity cpu",
		`{"capacity":["cpu"]}`:        "capacity",
	} {
		_, err := d.CreateMachine(ctx, createReq("invalid-1", "small", spec))
		requireCode(t, codes.InvalidArgument, err)
		assert.Contains(t, err.Error(), want, spec)
	}
	_, err := testClient.CoreV1().Nodes().Get(ctx, "invalid-1", metav1.GetOptions{})
	require.Error(t, err, "no Node for an invalid request")
}
