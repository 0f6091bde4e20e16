package virtualnode

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func getLease(t *testing.T, name string) *coordinationv1.Lease {
	t.Helper()
	l, err := testClient.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(t, err)
	return l
}

// removeLease deletes a Node's Lease: envtest runs no garbage collector.
func removeLease(t *testing.T, name string) {
	t.Helper()
	err := testClient.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(context.Background(), name, metav1.DeleteOptions{})
	if !apierrors.IsNotFound(err) {
		require.NoError(t, err)
	}
}

func TestBootEndBeatsOnlyThatNode(t *testing.T) {
	for _, watch := range []bool{false, true} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			// With an interval of an hour, a Node is only beaten at its boot end.
			d := startDriver(t, Options{HeartbeatInterval: time.Hour, WatchNodes: watch})
			ctx := context.Background()
			others := []string{"only-a", "only-b", "only-c"}
			late := "only-late"
			for _, name := range append(others, late) {
				t.Cleanup(func() { removeNode(t, name); removeLease(t, name) })
			}
			for _, name := range others {
				_, err := d.CreateMachine(ctx, createReq(name, "small", `{"bootDelay":"1s"}`))
				require.NoError(t, err)
			}
			nodeVersions, leaseVersions := map[string]string{}, map[string]string{}
			for _, name := range others {
				nodeVersions[name] = eventuallyCondition(t, name, corev1.NodeReady, corev1.ConditionTrue, "KubeletReady").ResourceVersion
				leaseVersions[name] = getLease(t, name).ResourceVersion
			}

			_, err := d.CreateMachine(ctx, createReq(late, "small", `{"bootDelay":"2s"}`))
			require.NoError(t, err)
			node := eventuallyCondition(t, late, corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")
			assert.Equal(t, node.UID, getLease(t, late).OwnerReferences[0].UID)

			for _, name := range others {
				assert.Equal(t, nodeVersions[name], getNode(t, name).ResourceVersion, "Node %s was written when %s finished booting", name, late)
				assert.Equal(t, leaseVersions[name], getLease(t, name).ResourceVersion, "the Lease of %s was written when %s finished booting", name, late)
			}
		})
	}
}

func TestManyNodesBecomeReadyAtTheirBootEnd(t *testing.T) {
	const (
		nodes = 200
		class = "fleet"
		// From the first create to the last Node Ready, for a boot delay of
		// 1s. The serial heartbeat of old took about 20s here (creates
		// included: they shared its rate limit); the kubelets take about 3s.
		deadline = 10 * time.Second
	)
	ctx := context.Background()
	names := make([]string, nodes)
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%03d", i)
	}
	// Registered before the driver starts, so it runs after the driver stopped.
	t.Cleanup(func() {
		err := testClient.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: LabelClass + "=" + class})
		require.NoError(t, err)
		for _, name := range names {
			removeLease(t, name)
		}
	})
	d := startDriver(t, Options{WatchNodes: true}) // the binary's defaults

	// As the core would: many creates at once.
	work := make(chan string)
	errs := make(chan error, nodes)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range work {
				_, err := d.CreateMachine(ctx, createReq(name, class, `{"bootDelay":"1s"}`))
				errs <- err
			}
		})
	}
	start := time.Now()
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	created := time.Now()

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list, err := testClient.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelClass + "=" + class})
		require.NoError(c, err)
		ready := 0
		for i := range list.Items {
			if rc := condition(&list.Items[i], corev1.NodeReady); rc != nil && rc.Status == corev1.ConditionTrue {
				ready++
			}
		}
		assert.Equal(c, nodes, ready, "Nodes Ready")
	}, deadline-time.Since(start), 100*time.Millisecond, "not every Node was Ready %s after the first create", deadline)
	t.Logf("%d Nodes created in %s, all Ready %s after the first create",
		nodes, created.Sub(start).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	list, err := testClient.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelClass + "=" + class})
	require.NoError(t, err)
	require.Len(t, list.Items, nodes)
	leases, err := testClient.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	owners := map[string]bool{}
	for _, l := range leases.Items {
		for _, o := range l.OwnerReferences {
			owners[string(o.UID)] = true
		}
	}
	for i := range list.Items {
		node := &list.Items[i]
		c := condition(node, corev1.NodeReady)
		// Condition times have second precision.
		assert.False(t, c.LastTransitionTime.Time.Before(readyAfter(node).Truncate(time.Second)), "%s Ready before its boot ended", node.Name)
		assert.True(t, owners[string(node.UID)], "%s has no Lease", node.Name)
	}
}

func TestRestartedDriverKeepsBeatingItsNodes(t *testing.T) {
	for _, watch := range []bool{false, true} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			ctx := context.Background()
			name := fmt.Sprintf("restart-%v", watch)
			t.Cleanup(func() { removeNode(t, name); removeLease(t, name) })
			first, stop := runDriver(t, Options{HeartbeatInterval: time.Hour})
			t.Cleanup(stop)
			_, err := first.CreateMachine(ctx, createReq(name, "small", `{"bootDelay":"1s"}`))
			require.NoError(t, err)
			beat := condition(eventuallyCondition(t, name, corev1.NodeReady, corev1.ConditionTrue, ""), corev1.NodeReady).LastHeartbeatTime
			renewed := getLease(t, name).Spec.RenewTime
			stop()

			// The new driver knows nothing but what it finds in the cluster.
			startDriver(t, Options{HeartbeatInterval: 500 * time.Millisecond, WatchNodes: watch})
			require.Eventually(t, func() bool {
				c := condition(getNode(t, name), corev1.NodeReady)
				l := getLease(t, name)
				return c.LastHeartbeatTime.Sub(beat.Time) >= time.Second && l.Spec.RenewTime.Sub(renewed.Time) >= time.Second
			}, 30*time.Second, 50*time.Millisecond)
		})
	}
}

func TestLeaseIsRecreatedAndNotRenewedWhenReadyUnknown(t *testing.T) {
	d := startDriver(t, Options{HeartbeatInterval: 300 * time.Millisecond, WatchNodes: true})
	ctx := context.Background()
	const name = "lease-1"
	t.Cleanup(func() { removeNode(t, name); removeLease(t, name) })
	_, err := d.CreateMachine(ctx, createReq(name, "small", "{}"))
	require.NoError(t, err)
	node := eventuallyCondition(t, name, corev1.NodeReady, corev1.ConditionTrue, "")
	require.Eventually(t, func() bool {
		_, err := testClient.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		return err == nil
	}, 30*time.Second, 50*time.Millisecond)

	// The driver remembers the Lease exists and patches it; when it
	// vanishes, the next beat creates it again.
	removeLease(t, name)
	require.Eventually(t, func() bool {
		l, err := testClient.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == node.UID
	}, 30*time.Second, 50*time.Millisecond, "the Lease was not created again")

	// A dead kubelet renews no Lease, while the Node's status goes on.
	annotate(t, name, AnnotationSimulate, SimulateReadyUnknown)
	node = eventuallyCondition(t, name, corev1.NodeReady, corev1.ConditionUnknown, reasonSimulated)
	renewed := getLease(t, name).Spec.RenewTime
	since := condition(node, corev1.NodeReady).LastHeartbeatTime
	require.Eventually(t, func() bool {
		return condition(getNode(t, name), corev1.NodeReady).LastHeartbeatTime.Sub(since.Time) >= 2*time.Second
	}, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, renewed, getLease(t, name).Spec.RenewTime, "the Lease was renewed while Ready=Unknown")

	annotate(t, name, AnnotationSimulate, "")
	eventuallyCondition(t, name, corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")
	require.Eventually(t, func() bool {
		return getLease(t, name).Spec.RenewTime.After(renewed.Time)
	}, 30*time.Second, 50*time.Millisecond, "the Lease is not renewed after the simulation ended")
}

func TestNodesOfEveryClusterGetHeartbeats(t *testing.T) {
	d := startDriver(t, Options{HeartbeatInterval: time.Hour})
	ctx := context.Background()
	t.Cleanup(func() {
		for _, name := range []string{"cluster-default", "cluster-secret"} {
			removeNode(t, name)
			removeLease(t, name)
		}
	})
	_, err := d.CreateMachine(ctx, createReq("cluster-default", "small", `{"bootDelay":"1s"}`))
	require.NoError(t, err)
	// The same API server, reached through a client of its own.
	req := createReq("cluster-secret", "small", `{"bootDelay":"1s"}`)
	req.Secrets = map[string][]byte{SecretKubeconfig: testEnv.KubeConfig}
	_, err = d.CreateMachine(ctx, req)
	require.NoError(t, err)
	assert.Len(t, d.clusters.all(), 2)

	eventuallyCondition(t, "cluster-default", corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")
	eventuallyCondition(t, "cluster-secret", corev1.NodeReady, corev1.ConditionTrue, "KubeletReady")
	getLease(t, "cluster-secret")
}

func TestBeatSchedule(t *testing.T) {
	k := &kubelets{interval: 30 * time.Second}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	booting := func(left time.Duration) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
			AnnotationReadyAfter: now.Add(left).Format(time.RFC3339Nano),
		}}}
	}

	// A booting Node is due when its boot ends, at most an interval away.
	assert.Equal(t, 2*time.Second, k.firstBeat(booting(2*time.Second), now, false))
	assert.Equal(t, 2*time.Second, k.firstBeat(booting(2*time.Second), now, true))
	assert.Equal(t, 30*time.Second, k.firstBeat(booting(time.Hour), now, true))
	assert.Equal(t, 2*time.Second, k.nextBeat(booting(2*time.Second), now))
	assert.Equal(t, 30*time.Second, k.nextBeat(booting(time.Hour), now))

	// A booted Node: at once when created, spread over the interval when
	// found, then every interval.
	assert.Equal(t, time.Duration(0), k.firstBeat(booting(-time.Second), now, false))
	assert.Equal(t, 30*time.Second, k.nextBeat(booting(-time.Second), now))
	seen := map[time.Duration]bool{}
	for range 100 {
		d := k.firstBeat(booting(-time.Second), now, true)
		require.GreaterOrEqual(t, d, time.Duration(0))
		require.Less(t, d, k.interval)
		seen[d] = true
	}
	assert.Greater(t, len(seen), 50, "found Nodes are not spread over the interval")
}

func TestConditionsChanged(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
	node.Status.Conditions = nextConditions(node, now)
	later := nextConditions(node, now.Add(time.Minute))
	assert.False(t, conditionsChanged(node.Status.Conditions, later), "only the times differ")

	node.Annotations[AnnotationSimulate] = SimulateNotReady
	assert.True(t, conditionsChanged(node.Status.Conditions, nextConditions(node, now)))
	node.Annotations[AnnotationSimulate] = "KernelDeadlock"
	assert.True(t, conditionsChanged(node.Status.Conditions, nextConditions(node, now)), "a new condition")
}
