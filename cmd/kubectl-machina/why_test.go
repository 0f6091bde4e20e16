package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/manager"
)

func (p *plugin) testWhy(t *testing.T) {
	const ns = "why"
	p.namespace(t, ns)
	d := p.deployment(t, ns, "web", 3, v1alpha1.MachineDeploymentStatus{Replicas: 3, ReadyReplicas: 1})
	ms := p.machineSet(t, d, "web-1", "1", 3, v1alpha1.MachineSetStatus{Replicas: 3, ReadyReplicas: 1}, nil)

	t.Run("pending: the node has not joined", func(t *testing.T) {
		m := p.machine(t, ns, "web-1-pending", ms, "why-node-pending", nil, nil)
		created := m.CreationTimestamp.Time
		m.Spec.ProviderID = "inmemory:///web-1-pending"
		require.NoError(t, p.c.Update(t.Context(), m))
		m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachinePending, LastUpdateTime: metav1.NewTime(created.Add(time.Minute))}
		m.Status.LastOperation = v1alpha1.LastOperation{
			Type: v1alpha1.MachineOperationCreate, State: v1alpha1.MachineStateSuccessful,
			Description: "Created the VM inmemory:///web-1-pending; waiting for node why-node-pending to join", LastUpdateTime: metav1.NewTime(created.Add(time.Minute)),
		}
		require.NoError(t, p.c.Status().Update(t.Context(), m))
		p.event(t, m, "Normal", "Creating", "Creating the VM", created.Add(30*time.Second))
		p.event(t, m, "Normal", "Created", "Created the VM inmemory:///web-1-pending", created.Add(time.Minute))

		// The clock is half a minute past a whole minute after the objects
		// were created: ages of objects created within the same few seconds
		// print the same, so the golden file is stable.
		out, err := p.run(t, created.Add(6*time.Minute+30*time.Second), ns, "why", m.Name)
		require.NoError(t, err)
		require.Contains(t, out, "the Node why-node-pending to join (creation timeout in 14m)")
		golden(t, "why-pending", out)
	})

	t.Run("running: a pod asks not to be disrupted", func(t *testing.T) {
		m := p.machine(t, ns, "web-1-dnd", ms, "why-node-dnd", nil, nil)
		p.node(t, "why-node-dnd", corev1.ConditionTrue, m.CreationTimestamp.Time)
		m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineRunning, LastUpdateTime: m.CreationTimestamp}
		require.NoError(t, p.c.Status().Update(t.Context(), m))
		out, err := p.run(t, m.CreationTimestamp.Add(time.Minute), ns, "why", m.Name)
		require.NoError(t, err)
		require.NotContains(t, out, "Do not disrupt:", "nothing asks yet")

		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch-1", Annotations: map[string]string{"machina.io/do-not-disrupt": "true"}},
			Spec:       corev1.PodSpec{NodeName: "why-node-dnd", Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
		}
		require.NoError(t, p.c.Create(t.Context(), pod))
		out, err = p.run(t, m.CreationTimestamp.Add(time.Minute), ns, "why", m.Name)
		require.NoError(t, err)
		require.Regexp(t, `Do not disrupt: +pod why/batch-1 on node why-node-dnd has machina\.io/do-not-disrupt=true: in-place updates`, out)
		require.NotContains(t, out, "Pre-update hooks:")

		m.Annotations = map[string]string{"pre-update.hook.machina.io/storage": ""}
		require.NoError(t, p.c.Update(t.Context(), m))
		out, err = p.run(t, m.CreationTimestamp.Add(time.Minute), ns, "why", m.Name)
		require.NoError(t, err)
		require.Regexp(t, `Pre-update hooks: +pre-update\.hook\.machina\.io/storage: an in-place or pool update of this machine waits`, out)

		// The deployment's controller wrote that a budget holds its rollout.
		require.NoError(t, p.c.Get(t.Context(), client.ObjectKeyFromObject(d), d))
		before := d.Status.DeepCopy()
		t.Cleanup(func() {
			// The other machines of the deployment print its status too.
			ctx := context.Background() // t.Context() is done by now
			require.NoError(t, p.c.Get(ctx, client.ObjectKeyFromObject(d), d))
			d.Status = *before
			require.NoError(t, p.c.Status().Update(ctx, d))
		})
		d.Status.Conditions = append(d.Status.Conditions, v1alpha1.MachineDeploymentCondition{
			Type: v1alpha1.MachineDeploymentProgressing, Status: v1alpha1.ConditionTrue, Reason: "MachineSetUpdated",
			Message: `Machine set "web-2" is progressing. Disruption budget: Rollout waits: spec.disruption.budgets[0] (0 machines) allows 0 machine(s) disrupted at once and 0 are.`,
		})
		require.NoError(t, p.c.Status().Update(t.Context(), d))
		out, err = p.run(t, m.CreationTimestamp.Add(time.Minute), ns, "why", m.Name)
		require.NoError(t, err)
		require.Regexp(t, `Disruption budget: +Rollout waits: spec\.disruption\.budgets\[0\] \(0 machines\) allows 0 machine\(s\) disrupted at once and 0 are \(MachineDeployment web\)`, out)
	})

	t.Run("unknown: the node went NotReady", func(t *testing.T) {
		m := p.machine(t, ns, "web-1-unknown", ms, "why-node-unknown", nil, nil)
		created := m.CreationTimestamp.Time
		sick := created.Add(2 * time.Minute)
		p.node(t, "why-node-unknown", corev1.ConditionFalse, sick)
		m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineUnknown, LastUpdateTime: metav1.NewTime(sick)}
		m.Status.UnhealthySince = &metav1.Time{Time: sick}
		m.Status.LastOperation = v1alpha1.LastOperation{
			Type: v1alpha1.MachineOperationHealthCheck, State: v1alpha1.MachineStateProcessing,
			Description: "Machine is unhealthy: node why-node-unknown: Ready=False", LastUpdateTime: metav1.NewTime(sick),
		}
		require.NoError(t, p.c.Status().Update(t.Context(), m))

		out, err := p.run(t, created.Add(16*time.Minute+30*time.Second), ns, "why", m.Name, "--machine-health-timeout=30m")
		require.NoError(t, err)
		require.Contains(t, out, "health timeout in 16m")
		golden(t, "why-unknown", out)
	})

	t.Run("deleting: the drain waits for a PodDisruptionBudget", func(t *testing.T) {
		m := p.machine(t, ns, "web-1-drain", ms, "why-node-drain", nil, nil)
		p.node(t, "why-node-drain", corev1.ConditionTrue, m.CreationTimestamp.Time)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-1", Labels: map[string]string{"app": "x"}},
			Spec:       corev1.PodSpec{NodeName: "why-node-drain", Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c"}}},
		}
		require.NoError(t, p.c.Create(t.Context(), pod))
		p.budget(t, ns, "app", map[string]string{"app": "x"}, 0)

		m.Finalizers = []string{v1alpha1.MachineFinalizer}
		require.NoError(t, p.c.Update(t.Context(), m))
		require.NoError(t, p.c.Delete(t.Context(), m))
		require.NoError(t, p.c.Get(t.Context(), client.ObjectKeyFromObject(m), m))
		deleted := m.DeletionTimestamp.Time
		m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachineTerminating, LastUpdateTime: metav1.NewTime(deleted)}
		m.Status.DeletionStep = v1alpha1.DeletionStepDrain
		m.Status.LastOperation = v1alpha1.LastOperation{
			Type: v1alpha1.MachineOperationDelete, State: v1alpha1.MachineStateProcessing,
			Description: "Draining node why-node-drain: 1 pods remaining, 1 blocked by a PodDisruptionBudget (why/app-1)", LastUpdateTime: metav1.NewTime(deleted.Add(time.Minute)),
		}
		m.Status.MachineConditions = []metav1.Condition{{
			Type: v1alpha1.MachineConditionDrained, Status: metav1.ConditionFalse, Reason: "PodsRemaining",
			Message: "1 pods remaining, 1 blocked by a PodDisruptionBudget (why/app-1)", LastTransitionTime: metav1.NewTime(deleted),
		}}
		require.NoError(t, p.c.Status().Update(t.Context(), m))
		t.Cleanup(func() {
			m.Finalizers = nil
			_ = p.c.Update(t.Context(), m)
		})

		out, err := p.run(t, deleted.Add(12*time.Minute+30*time.Second), ns, "why", m.Name)
		require.NoError(t, err)
		require.Contains(t, out, "drain blocked by PodDisruptionBudget why/app (0 disruptions allowed): why/app-1 (drain timeout in 1h48m, then forced)")
		golden(t, "why-drain", out)

		// Past the drain timeout the manager forces the drain.
		out, err = p.run(t, deleted.Add(3*time.Hour), ns, "why", m.Name)
		require.NoError(t, err)
		require.Contains(t, out, "a forced drain of Node why-node-drain")
	})

	// The other states, one waiting line each.
	for _, tc := range []struct {
		name   string
		status func(m *v1alpha1.Machine)
		want   string
	}{
		{"creating, the last try failed", func(m *v1alpha1.Machine) {
			m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.MachineOperationCreate, State: v1alpha1.MachineStateFailed,
				Description: "Creating the VM failed: RESOURCE_EXHAUSTED: quota", LastUpdateTime: m.CreationTimestamp}
		}, "the next try to create the VM; the last failed: Creating the VM failed: RESOURCE_EXHAUSTED: quota (creation timeout in 14m)"},
		{"creating", nil, "the driver to create the VM (creation timeout in 14m)"},
		{"failed", func(m *v1alpha1.Machine) { m.Status.CurrentStatus.Phase = v1alpha1.MachineFailed },
			"MachineSet web-1 to delete and replace it"},
		{"failed and preserved", func(m *v1alpha1.Machine) {
			m.Status.CurrentStatus.Phase = v1alpha1.MachineFailed
			m.Status.CurrentStatus.PreserveExpiryTime = &metav1.Time{Time: m.CreationTimestamp.Add(time.Hour)}
		}, "nothing: Failed and preserved until "},
		{"running", func(m *v1alpha1.Machine) { m.Status.CurrentStatus.Phase = v1alpha1.MachineRunning },
			"nothing: the machine is Running and its Node healthy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "web-1-" + strings.ReplaceAll(strings.ReplaceAll(tc.name, " ", "-"), ",", "")
			m := p.machine(t, ns, name, ms, "", nil, nil)
			if tc.status != nil {
				tc.status(m)
				require.NoError(t, p.c.Status().Update(t.Context(), m))
			}
			out, err := p.run(t, m.CreationTimestamp.Add(6*time.Minute), ns, "why", m.Name)
			require.NoError(t, err)
			require.Contains(t, out, "Waiting for:\n  "+tc.want, out)
		})
	}

	_, err := p.run(t, time.Now(), ns, "why", "nope")
	require.EqualError(t, err, `machines.machine.sapcloud.io "nope" not found`)

	t.Run("timeouts from the manager's /configz", p.testWhyConfigz)
	t.Run("health checks", p.testWhyHealthChecks)
}

// event records an event about the machine at the time, as the manager's
// recorder would.
func (p *plugin) event(t *testing.T, m *v1alpha1.Machine, typ, reason, message string, at time.Time) {
	t.Helper()
	require.NoError(t, p.c.Create(t.Context(), &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, GenerateName: m.Name + "."},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine", Namespace: m.Namespace, Name: m.Name, UID: m.UID,
		},
		Type: typ, Reason: reason, Message: message,
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 1,
		Source: corev1.EventSource{Component: "machine-controller"},
	}))
}

// budget creates a PodDisruptionBudget and sets the disruptions it allows,
// as the disruption controller (which envtest does not run) would.
func (p *plugin) budget(t *testing.T, ns, name string, selector map[string]string, allowed int32) {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MaxUnavailable: ptr.To(intstr.FromInt32(allowed)),
			Selector:       &metav1.LabelSelector{MatchLabels: selector},
		},
	}
	p.create(t, pdb, func() {
		pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, DisruptionsAllowed: allowed, CurrentHealthy: 2, DesiredHealthy: 2 - allowed, ExpectedPods: 2}
	})
}

// testWhyConfigz runs "why" against a stand-in for the manager's metrics
// server: an HTTPS server on this host behind a Service without selector
// and hand-made Endpoints, which the API server's service proxy reaches as
// it would reach the manager's pod (envtest runs no kubelet, so there is no
// pod; the API server refuses to proxy to loopback addresses, hence a
// non-loopback address of this host).
func (p *plugin) testWhyConfigz(t *testing.T) {
	ip := nonLoopbackIPv4(t)
	const ns = "why-configz"
	p.namespace(t, ns)
	d := p.deployment(t, ns, "web", 1, v1alpha1.MachineDeploymentStatus{Replicas: 1})
	ms := p.machineSet(t, d, "web-1", "1", 1, v1alpha1.MachineSetStatus{Replicas: 1}, nil)
	m := p.machine(t, ns, "web-1-pending", ms, "why-configz-node", nil, nil)
	m.Status.CurrentStatus = v1alpha1.CurrentStatus{Phase: v1alpha1.MachinePending, LastUpdateTime: m.CreationTimestamp}
	require.NoError(t, p.c.Status().Update(t.Context(), m))
	at := m.CreationTimestamp.Add(6*time.Minute + 30*time.Second)

	o := manager.DefaultOptions()
	o.MachineCreationTimeout = 35 * time.Minute
	doc := managerConfigz(t, o)
	var mode atomic.Value // "open", "secure" (401 without a bearer token) or "hang"
	var sawAuthorization atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			sawAuthorization.Store(true)
		}
		switch mode.Load() {
		case "secure":
			if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
		case "hang":
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		if r.URL.Path != "/configz" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(doc)
	}))
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	srv.Listener = ln
	srv.StartTLS()
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	port := int32(ln.Addr().(*net.TCPAddr).Port)

	// The API server's service proxy takes the address from the Service's
	// EndpointSlices and proxies only to an address whose target is a Pod
	// with that IP, so both stand in for what the kubelet and the
	// EndpointSlice controller would make.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manager"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "machina-manager"}}},
	}
	require.NoError(t, p.c.Create(t.Context(), pod))
	pod.Status.PodIP = ip
	pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	require.NoError(t, p.c.Status().Update(t.Context(), pod))
	p.proxiedService(t, ns, "manager-metrics", pod.Name, ip, port)
	service := "--manager-metrics-service=" + ns + "/manager-metrics:metrics"
	// The API server reads EndpointSlices from its informer: wait until it
	// knows this one.
	mode.Store("open")
	cfg := p.env.Config
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		_, err := readConfigz(t.Context(), cfg, ns+"/manager-metrics:metrics")
		assert.NoError(c, err)
	}, 20*time.Second, 50*time.Millisecond, "the service proxy never reached the stand-in")

	// A manager with --metrics-secure=false serves plain HTTP: the same
	// stand-in, without TLS, behind a Service of its own.
	plain := httptest.NewUnstartedServer(srv.Config.Handler)
	plainLn, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	require.NoError(t, err)
	plain.Listener = plainLn
	plain.Start()
	t.Cleanup(plain.Close)
	p.proxiedService(t, ns, "manager-metrics-plain", pod.Name, ip, int32(plainLn.Addr().(*net.TCPAddr).Port))

	t.Run("a manager serving plain HTTP", func(t *testing.T) {
		mode.Store("open")
		var out string
		// The API server learns of the new EndpointSlice from a watch.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			var err error
			out, err = p.run(t, at, ns, "why", m.Name, "--manager-metrics-service="+ns+"/manager-metrics-plain:metrics")
			assert.NoError(c, err)
			assert.Contains(c, out, "creation timeout in 29m")
		}, 20*time.Second, 50*time.Millisecond)
		require.Contains(t, out, "Timeouts: the manager's, from /configz of Service why-configz/manager-metrics-plain:metrics\n")
	})

	t.Run("the manager's timeouts", func(t *testing.T) {
		mode.Store("open")
		out, err := p.run(t, at, ns, "why", m.Name, service)
		require.NoError(t, err)
		require.Contains(t, out, "creation timeout in 29m", "35m from /configz, not the default 20m")
		require.Contains(t, out, "Timeouts: the manager's, from /configz of Service why-configz/manager-metrics:metrics\n")
	})

	t.Run("an explicit flag wins", func(t *testing.T) {
		mode.Store("open")
		out, err := p.run(t, at, ns, "why", m.Name, service, "--machine-creation-timeout=60m")
		require.NoError(t, err)
		require.Contains(t, out, "creation timeout in 54m")
		require.Contains(t, out, "Timeouts: the manager's, from /configz of Service why-configz/manager-metrics:metrics; --machine-creation-timeout from the command line\n")
	})

	t.Run("a secure manager refuses the proxied request", func(t *testing.T) {
		mode.Store("secure")
		out, err := p.run(t, at, ns, "why", m.Name, service)
		require.NoError(t, err)
		require.Contains(t, out, "creation timeout in 14m", "the defaults")
		require.Contains(t, out, "Timeouts: the manager's defaults, as its /configz could not be read (the manager refused the proxied request: 401 Unauthorized")
		// Why a secure manager cannot answer: the API server authenticates
		// the caller and does not pass the credentials on.
		require.False(t, sawAuthorization.Load(), "the service proxy forwarded an Authorization header")
	})

	t.Run("no answer within 2s", func(t *testing.T) {
		mode.Store("hang")
		start := time.Now()
		out, err := p.run(t, at, ns, "why", m.Name, service)
		require.NoError(t, err)
		require.Less(t, time.Since(start), 30*time.Second)
		require.Contains(t, out, "creation timeout in 14m", "the defaults")
		require.Contains(t, out, "(no answer from Service why-configz/manager-metrics:metrics within 2s)")
	})

	t.Run("no such Service", func(t *testing.T) {
		out, err := p.run(t, at, ns, "why", m.Name, "--manager-metrics-service="+ns+"/nope:metrics")
		require.NoError(t, err)
		require.Contains(t, out, "creation timeout in 14m", "the defaults")
		require.Contains(t, out, `(service why-configz/nope:metrics: no endpoints available for service "nope")`)
	})
}

// proxiedService makes a Service without selector whose port "metrics"
// leads to ip:port, as the EndpointSlice controller would for the Pod pod.
func (p *plugin) proxiedService(t *testing.T, ns, name, pod, ip string, port int32) {
	t.Helper()
	require.NoError(t, p.c.Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "metrics", Port: 10259, TargetPort: intstr.FromInt32(port), Protocol: corev1.ProtocolTCP,
		}}},
	}))
	require.NoError(t, p.c.Create(t.Context(), &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-1",
			Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: pod},
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("metrics"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}))
}

// nonLoopbackIPv4 returns an IPv4 address of this host that is not a
// loopback or link-local one, which the API server refuses to proxy to.
func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip := n.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
				return ip.String()
			}
		}
	}
	t.Skip("this host has no non-loopback IPv4 address for the API server's service proxy to reach")
	return ""
}
