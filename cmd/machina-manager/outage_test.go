package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// Timings of the outage test: the lease is lost 3s into the outage, which
// lasts at least outageFor; a machine is failed 3s after its Node turned
// unhealthy, so that a health decision taken on the outage would show.
const (
	outageFor     = 8 * time.Second
	healthTimeout = 3 * time.Second
)

// outageDefaults runs the outage test as an operator would meet it: the
// manager's default leader-election and API-server check flags and a
// 90-second outage. It takes about four minutes, so make test runs the
// scaled-down version; run it with
//
//	go test -count=1 -run TestAPIServerOutageWithTwoReplicas ./machina-manager/ -args -outage.default-flags
var outageDefaults = flag.Bool("outage.default-flags", false,
	"run the API server outage test with the default leader-election and API server check flags and a 90s outage")

// outageFlags returns the manager flags of the outage test that differ
// from the defaults, and how long the API server stays down.
func outageFlags() ([]string, time.Duration) {
	if *outageDefaults {
		return nil, 90 * time.Second
	}
	return []string{
		"--leader-elect-lease-duration=4s",
		"--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=500ms",
		"--machine-safety-apiserver-statuscheck-period=2s",
		"--machine-safety-apiserver-statuscheck-timeout=2s",
	}, outageFor
}

// TestAPIServerOutageWithTwoReplicas runs two manager replicas as real
// processes with leader election and kills the real kube-apiserver for
// longer than the renew deadline and the freeze timeout. Both replicas must
// stay up and serve /healthz during the outage, the leader must give up
// leading and freeze; afterwards exactly one replica leads, unfrozen, and
// acts: the machines whose Nodes come back NotReady go Unknown, are held
// past their health timeout in the grace period, and are Running again
// once their Nodes are Ready; a scale-up gets its machine; no machine is
// Failed or replaced.
func TestAPIServerOutageWithTwoReplicas(t *testing.T) {
	managerBin, driverBin := buildBinaries(t)

	env := testenv.Start(t, testenv.Restartable(t.TempDir()))
	c := env.Client
	ctx := t.Context()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e2eNamespace}}))

	// One driver for both replicas: the VMs of a cloud are the same for
	// whichever replica leads.
	socket := filepath.Join(socketDir(t), "driver.sock")
	endpoint := "unix://" + socket
	startDriver(t, driverBin, socket)

	type replica struct {
		p       *child
		metrics string
		health  string
	}
	replicas := make([]replica, 2)
	timingFlags, outage := outageFlags()
	for i := range replicas {
		metricsAddr, healthAddr := freeAddress(t), freeAddress(t)
		replicas[i] = replica{
			metrics: "http://" + metricsAddr + "/metrics",
			health:  "http://" + healthAddr,
			p: start(t, []string{"manager-a", "manager-b"}[i], managerBin, managerFlags(env.Kubeconfig, e2eNamespace, endpoint, metricsAddr, healthAddr, append([]string{
				"--machine-health-timeout=" + healthTimeout.String(),
				"--concurrent-syncs=5",
				"--v=1",
			}, timingFlags...)...)...),
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			// The full logs, for the timeline of both replicas.
			for i, r := range replicas {
				// A goroutine dump (SIGQUIT) shows where a stuck replica waits.
				if r.p.Running() {
					r.p.Signal(syscall.SIGQUIT)
					select {
					case <-r.p.Exited():
					case <-time.After(10 * time.Second):
					}
				}
				path := filepath.Join(os.TempDir(), fmt.Sprintf("outage-test-replica-%d.log", i))
				if os.WriteFile(path, []byte(r.p.log.String()), 0o600) == nil {
					t.Logf("replica %d log: %s", i, path)
				}
			}
		}
	})
	// leaders returns the replicas that report leading.
	leaders := func() []int {
		var out []int
		for i, r := range replicas {
			if metric(r.metrics, `leader_election_master_status{name="machina-manager"}`) == "1" {
				out = append(out, i)
			}
		}
		return out
	}
	require.Eventually(t, func() bool { return len(leaders()) == 1 }, waitFor, poll, "no replica leads")

	_, class := createClass(t, c, e2eNamespace, "outage-class", "outage-secret", map[string][]byte{"userData": []byte("#cloud-config\n")})
	labels := map[string]string{"set": "outage"}
	set := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: e2eNamespace, Name: "outage"},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: 3,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: class.Name}},
			},
		},
	}
	require.NoError(t, c.Create(ctx, set))

	// The test plays the kubelets: each machine's Node joins Ready.
	nodes := map[string]bool{}
	joinNodes(t, c, nodes, 3, "the machines never got their VMs")
	before := requireRunning(t, c, 3)
	failed := watchForFailed(t, c)

	// The outage: longer than the renew deadline (3s) and the freeze
	// timeout (2s).
	oldLeader := leaders()[0]
	require.NoError(t, env.StopAPIServer())
	downAt := time.Now()
	require.Eventually(t, func() bool {
		return len(leaders()) == 0 && metric(replicas[oldLeader].metrics, "mcm_machine_controller_frozen") == "1"
	}, waitFor, poll, "the leader neither gave up leading nor froze during the outage")
	for time.Since(downAt) < outage {
		for i, r := range replicas {
			require.True(t, r.p.Running(), "replica %d exited during the outage (code %d)", i, r.p.ExitCode())
		}
		requireHTTP(t, replicas[0].p, replicas[0].health+"/healthz", http.StatusOK)
		requireHTTP(t, replicas[1].p, replicas[1].health+"/healthz", http.StatusOK)
		time.Sleep(poll)
	}
	require.NoError(t, env.StartAPIServer())
	upAt := time.Now()
	// The kubelets could not report during the outage: the first thing
	// the API server hears of the Nodes is that they are NotReady (as the
	// node lifecycle controller marks Nodes whose heartbeats stopped).
	for name := range nodes {
		setNodeReady(t, c, name, corev1.ConditionFalse)
	}

	require.Eventually(t, func() bool { return len(leaders()) == 1 }, waitFor, poll, "no replica leads after the outage")
	leader := replicas[leaders()[0]]
	require.Eventually(t, func() bool { return metric(leader.metrics, "mcm_machine_controller_frozen") == "0" }, waitFor, poll,
		"the leader never unfroze")
	t.Logf("API server back after %v; replica %d leads", upAt.Sub(downAt).Round(time.Millisecond), leaders()[0])

	// The new leader sees the NotReady Nodes: their machines go Unknown,
	// and the grace period after the outage keeps them from Failed.
	requirePhases(t, c, v1alpha1.MachineUnknown, before)
	// Their health timeout passes while the grace period lasts: the
	// controller looks at them again and holds them Unknown.
	require.Eventually(t, func() bool {
		return strings.Count(leader.p.log.String(), "Grace period after an API server outage; not failing an unhealthy machine") >= len(before)
	}, waitFor, poll, "the leader never held an unhealthy machine in the grace period")
	// The kubelets report again: every machine is Running again, the same
	// machine as before.
	for name := range nodes {
		setNodeReady(t, c, name, corev1.ConditionTrue)
	}
	for name, uid := range requireRunning(t, c, 3) {
		assert.Equal(t, before[name], uid, "machine %s was replaced because of the outage", name)
	}

	// The new leader acts: a scale-up gets its machine.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &v1alpha1.MachineSet{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(set), got); err != nil {
			return err
		}
		got.Spec.Replicas = 4
		return c.Update(ctx, got)
	}))
	joinNodes(t, c, nodes, 4, "the new leader never created the machine of a scale-up")
	after := requireRunning(t, c, 4)
	for name, uid := range before {
		assert.Equal(t, uid, after[name], "machine %s was replaced because of the outage", name)
	}

	assert.Empty(t, failed(), "machines became Failed because of the outage")
	for i, r := range replicas {
		require.True(t, r.p.Running(), "replica %d exited (code %d)", i, r.p.ExitCode())
	}
	require.Len(t, leaders(), 1, "exactly one replica leads after the outage")
	lease := &coordinationv1.Lease{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: e2eNamespace, Name: "machina-manager"}, lease))
	require.NotNil(t, lease.Spec.HolderIdentity)
	assert.NotEmpty(t, *lease.Spec.HolderIdentity)
	assert.Contains(t, replicas[oldLeader].p.log.String(), "Lost the leader lease", "the old leader's log does not say it lost the lease")

	// A graceful stop of both: exit code 0, the lease released, and no
	// error-level "leader election lost".
	for i, r := range replicas {
		err, inTime := r.p.stop(45 * time.Second)
		require.True(t, inTime, "replica %d did not stop in time", i)
		require.NoError(t, err, "replica %d: exit code %d", i, r.p.ExitCode())
		assert.NotContains(t, r.p.log.String(), "leader election lost", "replica %d", i)
	}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: e2eNamespace, Name: "machina-manager"}, lease))
	assert.True(t, lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "",
		"lease still held by %v", lease.Spec.HolderIdentity)
}

// requireRunning waits until the namespace has want machines, all Running,
// and returns their UIDs by name.
func requireRunning(t *testing.T, c client.Client, want int) map[string]types.UID {
	t.Helper()
	var last []string
	out := map[string]types.UID{}
	require.Eventually(t, func() bool {
		list := &v1alpha1.MachineList{}
		if c.List(t.Context(), list, client.InNamespace(e2eNamespace)) != nil {
			return false
		}
		last = last[:0]
		clear(out)
		for _, m := range list.Items {
			last = append(last, m.Name+"="+string(m.Status.CurrentStatus.Phase)+" ("+m.Status.LastOperation.Description+")")
			if m.Status.CurrentStatus.Phase == v1alpha1.MachineRunning && m.DeletionTimestamp == nil {
				out[m.Name] = m.UID
			}
		}
		return len(list.Items) == want && len(out) == want
	}, waitFor, poll, "want %d Running machines; have %v", want, &last)
	return out
}

// setNodeReady sets the Ready condition of the Node named, as its kubelet
// (or the node lifecycle controller) would.
func setNodeReady(t *testing.T, c client.Client, name string, status corev1.ConditionStatus) {
	t.Helper()
	require.NoError(t, retry.OnError(retry.DefaultBackoff, func(error) bool { return true }, func() error {
		node := &corev1.Node{}
		if err := c.Get(t.Context(), client.ObjectKey{Name: name}, node); err != nil {
			return err
		}
		now := metav1.Now()
		reason := map[corev1.ConditionStatus]string{corev1.ConditionTrue: "KubeletReady", corev1.ConditionFalse: "KubeletNotReady"}[status]
		node.Status.Conditions = []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: status, Reason: reason,
			LastHeartbeatTime: now, LastTransitionTime: now,
		}}
		return c.Status().Update(t.Context(), node)
	}), "setting node %s Ready=%s", name, status)
}

// requirePhases waits until every machine named in machines has phase want.
func requirePhases(t *testing.T, c client.Client, want v1alpha1.MachinePhase, machines map[string]types.UID) {
	t.Helper()
	var last []string
	require.Eventually(t, func() bool {
		last = last[:0]
		for name := range machines {
			m := &v1alpha1.Machine{}
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: e2eNamespace, Name: name}, m); err != nil {
				return false
			}
			if m.Status.CurrentStatus.Phase != want {
				last = append(last, m.Name+"="+string(m.Status.CurrentStatus.Phase)+" ("+m.Status.LastOperation.Description+")")
			}
		}
		return len(last) == 0
	}, waitFor, poll, "want every machine %s; not yet: %v", want, &last)
}

// metric returns the value of the sample named (with its labels) on a
// /metrics page, or "" when the page or the sample is not there.
func metric(url, sample string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer func() { _ = resp.Body.Close() }()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(sample) + ` (\S+)$`).FindStringSubmatch(b.String())
	if m == nil {
		return ""
	}
	return m[1]
}

// joinNodes plays the kubelets until want machines have joined: it registers
// a Ready Node for every machine that has its VM and is not in joined yet.
func joinNodes(t *testing.T, c client.Client, joined map[string]bool, want int, msg string) {
	t.Helper()
	require.Eventually(t, func() bool {
		list := &v1alpha1.MachineList{}
		if c.List(t.Context(), list, client.InNamespace(e2eNamespace)) != nil {
			return false
		}
		for _, m := range list.Items {
			if n := m.Labels[v1alpha1.NodeLabelKey]; n != "" && m.Spec.ProviderID != "" && !joined[n] {
				registerNode(t, c, n)
				joined[n] = true
			}
		}
		return len(joined) == want
	}, waitFor, poll, msg)
}
