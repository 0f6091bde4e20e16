package drain

import (
	"context"
	"testing"
	"time"

	"github.com/machina-io/machina/core/drainorder"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/machina-io/machina/core/testenv"
)

// cluster is the API server the drain tests share, with helpers that play
// the parts of the controllers envtest does not run.
type cluster struct {
	t  *testing.T
	cs kubernetes.Interface
}

func startCluster(t *testing.T) *cluster {
	env := testenv.Start(t, testenv.WithoutCRDs())
	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	return &cluster{t: t, cs: cs}
}

func (c *cluster) ctx() context.Context { return context.Background() }

func (c *cluster) namespace(name string) {
	_, err := c.cs.CoreV1().Namespaces().Create(c.ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(c.t, err)
}

func (c *cluster) node(name string) {
	_, err := c.cs.CoreV1().Nodes().Create(c.ctx(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(c.t, err)
}

type podOpt func(*corev1.Pod)

func ownedBy(kind, name string) podOpt {
	return func(p *corev1.Pod) {
		apiVersion := "apps/v1"
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: name, UID: "00000000-0000-0000-0000-000000000001", Controller: ptr.To(true)}}
	}
}

func labelled(k, v string) podOpt {
	return func(p *corev1.Pod) { p.Labels = map[string]string{k: v} }
}

func priorityClass(name string) podOpt {
	return func(p *corev1.Pod) { p.Spec.PriorityClassName = name }
}

func mirror() podOpt {
	return func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }
}

func emptyDir() podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	}
}

func (c *cluster) pod(ns, name, node string, opts ...podOpt) {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	created, err := c.cs.CoreV1().Pods(ns).Create(c.ctx(), p, metav1.CreateOptions{})
	require.NoError(c.t, err)
	// Running and Ready, as its kubelet would report: the Eviction API
	// ignores PodDisruptionBudgets for pods that never ran.
	created.Status = corev1.PodStatus{
		Phase:      corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
	}
	_, err = c.cs.CoreV1().Pods(ns).UpdateStatus(c.ctx(), created, metav1.UpdateOptions{})
	require.NoError(c.t, err)
}

// finalizeTerminating does what a kubelet does once a pod's containers have
// stopped: it removes the pods that are being deleted.
func (c *cluster) finalizeTerminating(ns string) {
	pods, err := c.cs.CoreV1().Pods(ns).List(c.ctx(), metav1.ListOptions{})
	require.NoError(c.t, err)
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			err := c.cs.CoreV1().Pods(ns).Delete(c.ctx(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			if !apierrors.IsNotFound(err) {
				require.NoError(c.t, err)
			}
		}
	}
}

// pdb creates a PodDisruptionBudget; with no disruption controller running,
// it refuses every eviction until allowDisruptions sets its status.
func (c *cluster) pdb(ns, name string, selector map[string]string) {
	_, err := c.cs.PolicyV1().PodDisruptionBudgets(ns).Create(c.ctx(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
			Selector:       &metav1.LabelSelector{MatchLabels: selector},
		},
	}, metav1.CreateOptions{})
	require.NoError(c.t, err)
}

// allowDisruptions plays the disruption controller: it lets n evictions
// through.
func (c *cluster) allowDisruptions(ns, name string, n int32) {
	pdb, err := c.cs.PolicyV1().PodDisruptionBudgets(ns).Get(c.ctx(), name, metav1.GetOptions{})
	require.NoError(c.t, err)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: n,
		CurrentHealthy:     n,
		DesiredHealthy:     0,
		ExpectedPods:       n,
	}
	_, err = c.cs.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(c.ctx(), pdb, metav1.UpdateOptions{})
	require.NoError(c.t, err)
}

func (c *cluster) podState(ns, name string) string {
	p, err := c.cs.CoreV1().Pods(ns).Get(c.ctx(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "gone"
	}
	require.NoError(c.t, err)
	if p.DeletionTimestamp != nil {
		return "terminating"
	}
	return "running"
}

func TestDrain(t *testing.T) {
	c := startCluster(t)
	d := New(c.cs)

	t.Run("graceful pass by pass, honouring a PodDisruptionBudget", func(t *testing.T) {
		c.t = t
		const ns, node = "graceful", "node-graceful"
		c.namespace(ns)
		c.node(node)
		_, err := c.cs.AppsV1().DaemonSets(ns).Create(c.ctx(), &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
			Spec: appsv1.DaemonSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
				},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)

		c.pod(ns, "web-1", node, ownedBy("ReplicaSet", "web"), labelled("app", "web"))
		c.pod(ns, "web-2", node, ownedBy("ReplicaSet", "web"), labelled("app", "web"))
		c.pod(ns, "scratch", node, emptyDir()) // unmanaged, local storage: removed
		c.pod(ns, "agent-x", node, ownedBy("DaemonSet", "agent"), labelled("app", "agent"))
		c.pod(ns, "static", node, mirror()) // mirror pod: skipped
		c.pod(ns, "elsewhere", "other-node", ownedBy("ReplicaSet", "web"))
		c.pdb(ns, "web", map[string]string{"app": "web"})

		res, err := d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.True(t, res.NodeFound)
		assert.Equal(t, 3, res.Remaining, res.Summary())
		assert.Equal(t, 1, res.Evicted)
		assert.ElementsMatch(t, []string{ns + "/web-1", ns + "/web-2"}, res.Blocked)
		assert.Empty(t, res.Failed)
		assert.False(t, res.Drained())

		n, err := c.cs.CoreV1().Nodes().Get(c.ctx(), node, metav1.GetOptions{})
		require.NoError(t, err)
		assert.True(t, n.Spec.Unschedulable, "the node is cordoned")
		assert.Equal(t, "terminating", c.podState(ns, "scratch"))
		assert.Equal(t, "running", c.podState(ns, "agent-x"))
		assert.Equal(t, "running", c.podState(ns, "static"))
		assert.Equal(t, "running", c.podState(ns, "elsewhere"))

		// A terminating pod is waited for, not evicted again.
		res, err = d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.Equal(t, 3, res.Remaining)
		assert.Equal(t, 1, res.Terminating)
		assert.Equal(t, 0, res.Evicted)

		c.finalizeTerminating(ns)
		res, err = d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.Equal(t, 2, res.Remaining)
		assert.Len(t, res.Blocked, 2)

		// The budget allows the disruptions now.
		c.allowDisruptions(ns, "web", 2)
		res, err = d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.Equal(t, 2, res.Evicted, res.Summary())
		assert.Empty(t, res.Blocked)
		assert.Equal(t, "terminating", c.podState(ns, "web-1"))
		assert.Equal(t, "terminating", c.podState(ns, "web-2"))

		c.finalizeTerminating(ns)
		res, err = d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.True(t, res.Drained(), res.Summary())
		assert.Equal(t, "node drained", res.Summary())
		assert.Equal(t, "running", c.podState(ns, "agent-x"))
		assert.Equal(t, "running", c.podState(ns, "static"))
	})

	t.Run("forced pass deletes without eviction", func(t *testing.T) {
		c.t = t
		const ns, node = "forced", "node-forced"
		c.namespace(ns)
		c.node(node)
		c.pod(ns, "db-1", node, ownedBy("StatefulSet", "db"), labelled("app", "db"))
		c.pod(ns, "db-2", node, ownedBy("StatefulSet", "db"), labelled("app", "db"))
		c.pdb(ns, "db", map[string]string{"app": "db"})

		// Graceful: blocked.
		res, err := d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.Len(t, res.Blocked, 2)

		res, err = d.Pass(c.ctx(), node, Options{Force: true})
		require.NoError(t, err)
		assert.Equal(t, 2, res.Evicted)
		assert.Empty(t, res.Blocked)
		// Grace period zero: gone at once, no kubelet needed.
		assert.Equal(t, "gone", c.podState(ns, "db-1"))
		assert.Equal(t, "gone", c.podState(ns, "db-2"))

		res, err = d.Pass(c.ctx(), node, Options{Force: true})
		require.NoError(t, err)
		assert.True(t, res.Drained())
	})

	t.Run("critical pods after the others; drain=skip pods stay", func(t *testing.T) {
		c.t = t
		const ns, node = "order", "node-order"
		c.namespace(ns)
		c.node(node)
		c.pod(ns, "web-1", node, ownedBy("ReplicaSet", "web"), labelled("app", "web"))
		c.pod(ns, "dns-1", node, ownedBy("ReplicaSet", "dns"), labelled("app", "dns"), priorityClass("system-cluster-critical"))
		c.pod(ns, "log-shipper", node, ownedBy("ReplicaSet", "log"), labelled(drainorder.DrainLabel, drainorder.DrainSkip))

		// First the pods that are not critical; the critical one waits.
		res, err := d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.Equal(t, 1, res.Evicted, res.Summary())
		assert.Equal(t, 1, res.Held, res.Summary())
		assert.Equal(t, 2, res.Remaining, res.Summary())
		assert.Contains(t, res.Summary(), "1 critical pods wait for the others to go")
		assert.Equal(t, "terminating", c.podState(ns, "web-1"))
		assert.Equal(t, "running", c.podState(ns, "dns-1"))

		// Still terminating: the critical pod still waits.
		res, err = d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.Zero(t, res.Evicted, res.Summary())
		assert.Equal(t, "running", c.podState(ns, "dns-1"))

		// The others are gone: now the critical pod goes.
		c.finalizeTerminating(ns)
		res, err = d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.Equal(t, 1, res.Evicted, res.Summary())
		assert.Zero(t, res.Held)
		assert.Equal(t, "terminating", c.podState(ns, "dns-1"))

		c.finalizeTerminating(ns)
		res, err = d.Pass(c.ctx(), node, Options{})
		require.NoError(t, err)
		assert.True(t, res.Drained(), res.Summary())
		// The pod labelled drain=skip was never touched.
		assert.Equal(t, "running", c.podState(ns, "log-shipper"))
	})

	t.Run("NoCordon evicts and leaves the node schedulable", func(t *testing.T) {
		c.t = t
		const ns, node = "nocordon", "node-nocordon"
		c.namespace(ns)
		c.node(node)
		c.pod(ns, "web-1", node, ownedBy("ReplicaSet", "web"), labelled("app", "web"))

		res, err := d.Pass(c.ctx(), node, Options{NoCordon: true})
		require.NoError(t, err)
		assert.Equal(t, 1, res.Evicted, res.Summary())
		assert.Equal(t, "terminating", c.podState(ns, "web-1"))
		n, err := c.cs.CoreV1().Nodes().Get(c.ctx(), node, metav1.GetOptions{})
		require.NoError(t, err)
		assert.False(t, n.Spec.Unschedulable, "the node is not cordoned")
	})

	t.Run("missing node", func(t *testing.T) {
		c.t = t
		res, err := d.Pass(c.ctx(), "no-such-node", Options{})
		require.NoError(t, err)
		assert.False(t, res.NodeFound)
		assert.True(t, res.Drained())
	})

	t.Run("volume attachments", func(t *testing.T) {
		c.t = t
		va := func(name, node string, finalizers ...string) {
			_, err := c.cs.StorageV1().VolumeAttachments().Create(c.ctx(), &storagev1.VolumeAttachment{
				ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
				Spec: storagev1.VolumeAttachmentSpec{
					Attacher: "csi.example.com",
					NodeName: node,
					Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + name)},
				},
			}, metav1.CreateOptions{})
			require.NoError(t, err)
		}
		va("va-1", "node-va")
		va("va-2", "node-va", "example.com/attacher")
		va("va-other", "node-other")

		remaining, err := d.DeleteVolumeAttachments(c.ctx(), "node-va")
		require.NoError(t, err)
		assert.Equal(t, 2, remaining, "both were deleted in this call, and are counted until a later list no longer shows them")

		// va-2 is held by its attacher's finalizer.
		remaining, err = d.DeleteVolumeAttachments(c.ctx(), "node-va")
		require.NoError(t, err)
		assert.Equal(t, 1, remaining)

		held, err := c.cs.StorageV1().VolumeAttachments().Get(c.ctx(), "va-2", metav1.GetOptions{})
		require.NoError(t, err)
		held.Finalizers = nil
		_, err = c.cs.StorageV1().VolumeAttachments().Update(c.ctx(), held, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			remaining, err = d.DeleteVolumeAttachments(c.ctx(), "node-va")
			return err == nil && remaining == 0
		}, 10*time.Second, 50*time.Millisecond)

		_, err = c.cs.StorageV1().VolumeAttachments().Get(c.ctx(), "va-other", metav1.GetOptions{})
		assert.NoError(t, err, "another node's attachment is left alone")
	})
}
