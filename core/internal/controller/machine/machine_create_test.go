package machine

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/internal/bootstrap"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
	driverv1alpha1 "github.com/machina-io/machina/proto/machina/driver/v1alpha1"
)

const waitLong = 60 * time.Second

// A new machine is created, waits for its node (Pending), and runs once the
// node is Ready; the user data reaches the driver with its placeholders
// filled and a bootstrap token that lives until the machine joined.
func testCreateJoinRun(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", map[string]string{
		"userData":    "#cloud-config\nhostname: <<MACHINE_NAME>>\ntoken: <<BOOTSTRAP_TOKEN>>\n",
		"accessKeyID": "AKIA-not-a-real-key",
	})
	// The node registers only once the test has looked at the token.
	w.kubelet.holdNode("m1")
	w.start()
	w.machine("m1", "small")

	m := w.waitPhase("m1", v1alpha1.MachinePending, waitLong)
	vms := w.mem.VMs()
	require.Len(t, vms, 1)
	assert.Equal(t, vms[0].ProviderID, m.Spec.ProviderID)
	assert.Equal(t, "m1", m.Labels[v1alpha1.NodeLabelKey])
	assert.Equal(t, "3", m.Annotations[v1alpha1.MachinePriorityAnnotation])
	assert.Contains(t, m.Finalizers, v1alpha1.MachineFinalizer)
	assert.Equal(t, v1alpha1.MachineOperationCreate, m.Status.LastOperation.Type)
	assert.Equal(t, v1alpha1.MachineStateProcessing, m.Status.LastOperation.State)
	assert.NotEmpty(t, m.Status.Addresses)
	assert.Equal(t, "Created", m.Status.LastKnownState, "the driver's last_known_state is stored")

	req := w.drv.createRequest()
	require.NotNil(t, req)
	userData := string(req.GetUserData())
	assert.Contains(t, userData, "hostname: m1\n")
	token := regexp.MustCompile(`token: ([a-z0-9]{6}\.[a-z0-9]{16})`).FindStringSubmatch(userData)
	require.Len(t, token, 2, "user data %q carries a bootstrap token", userData)
	assert.Equal(t, []byte("AKIA-not-a-real-key"), req.GetSecrets()["accessKeyID"])
	assert.NotContains(t, req.GetSecrets(), "userData", "userData travels in user_data only")
	assert.Equal(t, w.ns, req.GetMachineClass().GetNamespace())

	tokenKey := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: bootstrap.SecretName(types.NamespacedName{Namespace: w.ns, Name: "m1"})}
	secret := &corev1.Secret{}
	require.NoError(t, env.Client.Get(w.ctx, tokenKey, secret))
	assert.Equal(t, token[1], string(secret.Data["token-id"])+"."+string(secret.Data["token-secret"]))

	w.kubelet.mu.Lock()
	delete(w.kubelet.hold, "m1")
	w.kubelet.mu.Unlock()
	m = w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	assert.Equal(t, v1alpha1.MachineStateSuccessful, m.Status.LastOperation.State)
	assert.Regexp(t, `^Machine joined the cluster as node m1 in [0-9hms.]+$`, m.Status.LastOperation.Description)
	assert.NotContains(t, m.Annotations, v1alpha1.MachineJoinDurationAnnotation, "the join duration goes to a histogram, not to a write per machine")
	joins := &dto.Metric{}
	require.NoError(t, joinDuration.WithLabelValues(w.ns, "").(prometheus.Histogram).Write(joins))
	assert.Equal(t, uint64(1), joins.GetHistogram().GetSampleCount(), "the join is observed once")
	require.NotEmpty(t, m.Status.Conditions, "node conditions are mirrored")
	assert.Contains(t, m.Status.Conditions, findCond(m.Status.Conditions, corev1.NodeReady))
	assert.Equal(t, corev1.ConditionTrue, findCond(m.Status.Conditions, corev1.NodeReady).Status)
	w.rec.assertPhases(t, "m1", []string{"", "Pending", "Running"})
	assert.Equal(t, 1, w.mem.Calls(inmemory.MethodCreateMachine))

	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.Client.Get(w.ctx, tokenKey, &corev1.Secret{}))
	}, waitLong, 50*time.Millisecond, "the bootstrap token is deleted once the machine joined")
	w.waitEvent("m1", corev1.EventTypeNormal, reasonCreated)
	w.waitEvent("m1", corev1.EventTypeNormal, reasonJoined)

	// A machine deleted before it joined: its deletion deletes the token
	// (a joined machine's deletion sends no DELETE for a token gone since
	// the join).
	w.kubelet.holdNode("m2")
	w.machine("m2", "small")
	w.waitPhase("m2", v1alpha1.MachinePending, waitLong)
	token2 := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: bootstrap.SecretName(types.NamespacedName{Namespace: w.ns, Name: "m2"})}
	require.NoError(t, env.Client.Get(w.ctx, token2, &corev1.Secret{}))
	w.delete("m2")
	w.waitGone("m2", waitLong)
	assert.True(t, apierrors.IsNotFound(env.Client.Get(w.ctx, token2, &corev1.Secret{})), "the token of a machine that never joined outlived its deletion")

	// Kubelet heartbeats (condition timestamps only) cause no machine
	// write; a real condition change causes exactly one.
	writes := w.rec.writesOf("m1")
	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeReady, corev1.ConditionTrue)
	setNodeCondition(t, w.ctx, env.Client, "m1", corev1.NodeDiskPressure, corev1.ConditionFalse)
	setNodeCondition(t, w.ctx, env.Client, "m1", "FrequentKubeletRestart", corev1.ConditionFalse)
	w.eventually("m1", waitLong, "the new condition mirrored", func(m *v1alpha1.Machine) bool {
		return findCond(m.Status.Conditions, "FrequentKubeletRestart").Status == corev1.ConditionFalse
	})
	require.Eventually(t, func() bool { return w.rec.writesOf("m1") > writes }, waitLong, 20*time.Millisecond)
	assert.Equal(t, writes+1, w.rec.writesOf("m1"), "one write for the condition, none for heartbeats")
}

func findCond(conds []corev1.NodeCondition, t corev1.NodeConditionType) corev1.NodeCondition {
	for _, c := range conds {
		if c.Type == t {
			return c
		}
	}
	return corev1.NodeCondition{}
}

// The watch may deliver the machine first with or without an empty phase.
func withoutLeadingEmpty(phases []string) []string {
	if len(phases) > 0 && phases[0] != "" {
		return append([]string{""}, phases...)
	}
	return phases
}

// A VM that exists for the machine's name is adopted: no second create.
func testAdoptExistingVM(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	c := w.class("small", nil)
	pre, err := w.mem.CreateMachine(w.ctx, &driverv1alpha1.CreateMachineRequest{
		Machine:      &driverv1alpha1.Machine{Name: "m1", Namespace: w.ns},
		MachineClass: &driverv1alpha1.MachineClass{Name: c.Name, Namespace: w.ns, ProviderSpec: c.ProviderSpec.Raw},
	})
	require.NoError(t, err)
	require.Equal(t, 1, w.mem.Calls(inmemory.MethodCreateMachine))

	w.start()
	w.machine("m1", "small")
	m := w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	assert.Equal(t, pre.GetProviderId(), m.Spec.ProviderID)
	assert.Equal(t, 1, w.mem.Calls(inmemory.MethodCreateMachine), "no CreateMachine for an adopted VM")
	assert.Len(t, w.mem.VMs(), 1)
	w.waitEvent("m1", corev1.EventTypeNormal, reasonAdopted)
}

// A driver that needs a second stage gets InitializeMachine after the
// create, and again after a failed initialization (GetMachineStatus then
// reports needs_initialization).
func testInitialize(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{RequireInitialization: true})
	w.class("small", nil)
	w.mem.SetFault(inmemory.MethodInitializeMachine, inmemory.Fault{Code: codes.Unavailable, Count: 1})
	w.start()
	w.machine("m1", "small")
	m := w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	assert.Equal(t, 2, w.mem.Calls(inmemory.MethodInitializeMachine))
	assert.Equal(t, 1, w.mem.Calls(inmemory.MethodCreateMachine))
	assert.Contains(t, w.rec.phasesOf("m1"), "CrashLoopBackOff")
	assert.Contains(t, w.rec.codesOf("m1"), "Unavailable")
	assert.Equal(t, "Initialized", m.Status.LastKnownState)
	assert.False(t, w.mem.VMs()[0].NeedsInitialization)
}

// CreateMachine creates the VM but its answer is lost (DEADLINE_EXCEEDED):
// the next pass finds the VM by name and adopts it; there is one VM.
func testLostCreateAnswer(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.mem.SetFault(inmemory.MethodCreateMachine, inmemory.Fault{Code: codes.DeadlineExceeded, After: true, Count: 1})
	w.start()
	w.machine("m1", "small")
	m := w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	assert.Equal(t, 1, w.mem.Calls(inmemory.MethodCreateMachine))
	require.Len(t, w.mem.VMs(), 1)
	assert.Equal(t, w.mem.VMs()[0].ProviderID, m.Spec.ProviderID)
	assert.Equal(t, []string{"DeadlineExceeded"}, w.rec.codesOf("m1"))
	assert.Contains(t, w.rec.phasesOf("m1"), "CrashLoopBackOff")
}

// Each failure code of CreateMachine: phase CrashLoopBackOff,
// lastOperation {Create, Failed, errorCode}, and the next CreateMachine
// after the retry period the Driver API assigns to the code.
func testCreateErrors(t *testing.T, env *testenv.Env) {
	o := fastOptions()
	cases := []struct {
		code     codes.Code
		min, max time.Duration
	}{
		{codes.Unavailable, o.ShortRetry, o.MediumRetry},
		{codes.DeadlineExceeded, o.ShortRetry, o.MediumRetry},
		{codes.InvalidArgument, o.MediumRetry, o.ResourceExhaustedRetry},
		{codes.Internal, o.MediumRetry, o.ResourceExhaustedRetry},
		{codes.ResourceExhausted, o.ResourceExhaustedRetry, o.LongRetry},
		{codes.Unimplemented, o.LongRetry, 3 * o.LongRetry},
	}
	for _, c := range cases {
		t.Run(c.code.String(), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, env, env, inmemory.Options{})
			// Parallel worlds share the cluster's node names: one each.
			name := "err-" + strings.ToLower(c.code.String())
			w.class("small", nil)
			w.mem.SetFault(inmemory.MethodCreateMachine, inmemory.Fault{Code: c.code, Message: "injected " + c.code.String(), Count: 1})
			w.start()
			w.machine(name, "small")

			m := w.eventually(name, waitLong, "a failed create", func(m *v1alpha1.Machine) bool {
				return m != nil && m.Status.LastOperation.ErrorCode != ""
			})
			assert.Equal(t, v1alpha1.MachineCrashLoopBackOff, m.Status.CurrentStatus.Phase)
			assert.Equal(t, v1alpha1.MachineOperationCreate, m.Status.LastOperation.Type)
			assert.Equal(t, v1alpha1.MachineStateFailed, m.Status.LastOperation.State)
			assert.Equal(t, c.code.String(), m.Status.LastOperation.ErrorCode)
			assert.Contains(t, m.Status.LastOperation.Description, "injected "+c.code.String())
			w.waitEvent(name, corev1.EventTypeWarning, reasonCreateFailed)

			w.waitPhase(name, v1alpha1.MachineRunning, waitLong)
			times := w.drv.callTimes(inmemory.MethodCreateMachine)
			require.Len(t, times, 2, "one failed and one successful create")
			gap := times[1].Sub(times[0])
			assert.GreaterOrEqual(t, gap, c.min, "retry after %s", c.code)
			assert.Less(t, gap, c.max, "retry after %s", c.code)
			assert.Equal(t, []string{c.code.String()}, w.rec.codesOf(name))
			assert.Empty(t, w.rec.everPhase(v1alpha1.MachineFailed))
		})
	}
}

// A creation that keeps failing becomes Failed once the machine's creation
// timeout has passed since its creationTimestamp.
func testCreationTimeoutDriverFailing(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.mem.SetFault(inmemory.MethodCreateMachine, inmemory.Fault{Code: codes.Unavailable})
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineCreationTimeout: &v1alpha1.Duration{Duration: 3 * time.Second}}
	})
	m := w.waitPhase("m1", v1alpha1.MachineFailed, waitLong)
	assert.Equal(t, "Unavailable", m.Status.LastOperation.ErrorCode)
	assert.Contains(t, m.Status.LastOperation.Description, "creation timeout of 3s has passed")
	assert.GreaterOrEqual(t, m.Status.CurrentStatus.LastUpdateTime.Sub(m.CreationTimestamp.Time), 2*time.Second,
		"not Failed before the timeout (timestamps have second precision)")
	w.rec.assertPhases(t, "m1", []string{"", "CrashLoopBackOff", "Failed"})
	assert.Empty(t, w.mem.VMs())
	w.waitEvent("m1", corev1.EventTypeWarning, reasonCreateFailed)
}

// A VM whose node never registers: Pending, then Failed at the creation
// timeout.
func testCreationTimeoutNoNode(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.kubelet.holdNode("m1")
	w.start()
	w.machine("m1", "small", func(m *v1alpha1.Machine) {
		m.Spec.MachineConfiguration = &v1alpha1.MachineConfiguration{MachineCreationTimeout: &v1alpha1.Duration{Duration: 3 * time.Second}}
	})
	m := w.waitPhase("m1", v1alpha1.MachineFailed, waitLong)
	assert.Contains(t, m.Status.LastOperation.Description, "did not join the cluster within the creation timeout of 3s")
	assert.Contains(t, m.Status.LastOperation.Description, "node m1 not found")
	w.rec.assertPhases(t, "m1", []string{"", "Pending", "Failed"})
	w.waitEvent("m1", corev1.EventTypeWarning, reasonFailed)
}

// The new VM's node name belongs to a Node older than the machine: the VM
// is deleted and the machine Failed, and the old Node is left alone.
func testStaleNode(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	// The inmemory driver names nodes after machines; the old Node comes
	// first, at least a second earlier (timestamps have second precision).
	name := "stale-" + w.ns
	old := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"old": "true"}}}
	require.NoError(t, env.Client.Create(w.ctx, old))
	require.Eventually(t, func() bool { return time.Now().Unix() > old.CreationTimestamp.Unix() }, 5*time.Second, 10*time.Millisecond)
	w.start()
	w.machine(name, "small")

	m := w.waitPhase(name, v1alpha1.MachineFailed, waitLong)
	assert.Contains(t, m.Status.LastOperation.Description, "exists since")
	assert.Empty(t, m.Labels[v1alpha1.NodeLabelKey], "the old Node is not this machine's")
	assert.Empty(t, w.mem.VMs(), "the new VM was deleted")
	assert.Equal(t, 1, w.mem.Calls(inmemory.MethodDeleteMachine))
	w.waitEvent(name, corev1.EventTypeWarning, reasonStaleNode)
	require.NoError(t, env.Client.Get(w.ctx, client.ObjectKeyFromObject(old), &corev1.Node{}))
}

// A machine whose class does not exist yet waits (lastOperation Failed, a
// Warning event, no phase change) and is created once the class appears.
func testMissingClass(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.opts.MediumRetry = time.Hour // only the class watch can bring the machine on
	w.start()
	w.machine("m1", "later")
	m := w.eventually("m1", waitLong, "the missing class to be reported", func(m *v1alpha1.Machine) bool {
		return m != nil && m.Status.LastOperation.State == v1alpha1.MachineStateFailed
	})
	assert.Contains(t, m.Status.LastOperation.Description, "MachineClass "+w.ns+"/later not found")
	assert.Equal(t, v1alpha1.MachinePhase(""), m.Status.CurrentStatus.Phase)
	w.waitEvent("m1", corev1.EventTypeWarning, reasonClassNotReady)
	assert.Zero(t, w.mem.Calls(inmemory.MethodGetMachineStatus))

	w.class("later", nil)
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
}
