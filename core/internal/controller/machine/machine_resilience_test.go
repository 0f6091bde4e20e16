package machine

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
	"github.com/machina-io/machina/drivers/inmemory"
)

// The driver process restarts (its server stops and serves again on the
// same socket): machines being created retry, running ones are untouched,
// none fails.
func testDriverRestart(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", nil)
	w.start()
	w.machine("m1", "small")
	w.machine("m2", "small")
	w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	w.waitPhase("m2", v1alpha1.MachineRunning, waitLong)

	w.stopDriver()
	w.machine("m3", "small")
	m := w.eventually("m3", waitLong, "a create that cannot reach the driver", func(m *v1alpha1.Machine) bool {
		return m != nil && m.Status.LastOperation.ErrorCode == "Unavailable"
	})
	assert.Equal(t, v1alpha1.MachineCrashLoopBackOff, m.Status.CurrentStatus.Phase)

	w.startDriver()
	w.waitPhase("m3", v1alpha1.MachineRunning, waitLong)
	assert.Empty(t, w.rec.everPhase(v1alpha1.MachineFailed))
	for _, n := range []string{"m1", "m2"} {
		w.rec.assertPhases(t, n, []string{"", "Pending", "Running"})
		assert.Equal(t, v1alpha1.MachineRunning, w.get(n).Status.CurrentStatus.Phase)
	}
	assert.Len(t, w.mem.VMs(), 3)
}

// Secret values (of the class Secrets, the user data and the bootstrap
// token) appear in no log line, event or Machine status, through a whole
// lifecycle with a driver error in it, although the driver received them.
func testSecretsNeverLeak(t *testing.T, env *testenv.Env) {
	const canary = "canary-7f3c9a1e"
	w := newWorld(t, env, env, inmemory.Options{})
	w.class("small", map[string]string{
		"accessKeyID": canary + "-key",
		"userData":    "#!/bin/sh\necho " + canary + "-userdata <<BOOTSTRAP_TOKEN>>\n",
	})
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, Name: "creds"}, StringData: map[string]string{"password": canary + "-password"}}
	require.NoError(t, env.Client.Create(w.ctx, creds))
	class := &v1alpha1.MachineClass{}
	require.NoError(t, env.Client.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: "small"}, class))
	class.CredentialsSecretRef = &corev1.SecretReference{Name: "creds", Namespace: w.ns}
	require.NoError(t, env.Client.Update(w.ctx, class))

	w.mem.SetFault(inmemory.MethodCreateMachine, inmemory.Fault{Code: codes.InvalidArgument, Message: "secrets[\"region\"] is required", Count: 1})
	w.start()
	w.machine("m1", "small")
	m := w.waitPhase("m1", v1alpha1.MachineRunning, waitLong)
	statusJSON, err := json.Marshal(m)
	require.NoError(t, err)

	// The driver got the secrets: the test would see a leak if there were one.
	req := w.drv.createRequest()
	require.NotNil(t, req)
	assert.Equal(t, []byte(canary+"-key"), req.GetSecrets()["accessKeyID"])
	assert.Equal(t, []byte(canary+"-password"), req.GetSecrets()["password"])
	assert.Contains(t, string(req.GetUserData()), canary+"-userdata")
	token := strings.Fields(strings.SplitN(string(req.GetUserData()), canary+"-userdata ", 2)[1])[0]
	require.Regexp(t, `^[a-z0-9]{6}\.[a-z0-9]{16}$`, token)

	w.delete("m1")
	w.waitGone("m1", waitLong)

	logs := w.logs.String()
	require.Contains(t, logs, `"msg"="request sent"`, "request bodies are logged at this verbosity")
	require.Contains(t, logs, base64.StdEncoding.EncodeToString([]byte("***stripped***")), "and their secrets stripped")
	events := strings.Join(w.events(), "\n")
	require.Contains(t, events, "InvalidArgument")
	status := string(statusJSON)

	// Whole values, plain and base64 (as protojson renders bytes).
	for _, secret := range []string{canary + "-key", canary + "-password", string(req.GetUserData()), token} {
		for _, form := range []string{secret, base64.StdEncoding.EncodeToString([]byte(secret))} {
			assert.NotContains(t, logs, form)
			assert.NotContains(t, events, form)
			assert.NotContains(t, status, form)
		}
	}
	// Any 8 bytes of the canary or of the token's secret half: a hex dump
	// of a request body (client-go at V(8)) splits values across lines.
	for _, secret := range []string{canary, strings.Split(token, ".")[1]} {
		for i := 0; i+8 <= len(secret); i++ {
			window := secret[i : i+8]
			assert.NotContains(t, logs, window)
			assert.NotContains(t, events, window)
			assert.NotContains(t, status, window)
		}
	}
}

// Without a target cluster there is no Node: a created machine is
// Available, and its deletion skips the node lookup, the drain and the
// Node's deletion.
func testNoTargetCluster(t *testing.T, env *testenv.Env) {
	w := newWorld(t, env, env, inmemory.Options{})
	w.noTarget = true
	w.class("small", map[string]string{"userData": "name=<<MACHINE_NAME>> token=<<BOOTSTRAP_TOKEN>>"})
	w.start()
	w.machine("nt1", "small")
	m := w.waitPhase("nt1", v1alpha1.MachineAvailable, waitLong)
	assert.NotEmpty(t, m.Spec.ProviderID)
	assert.Empty(t, m.Labels[v1alpha1.NodeLabelKey], "no node label without a target cluster")
	assert.Equal(t, v1alpha1.MachineStateSuccessful, m.Status.LastOperation.State)
	assert.Equal(t, "name=nt1 token=", string(w.drv.createRequest().GetUserData()), "no bootstrap token without a target cluster")

	w.delete("nt1")
	w.waitGone("nt1", waitLong)
	w.rec.assertStepsFollow(t, "nt1", []string{"GetVMStatus", "DeleteVM", "DeleteNode", "RemoveFinalizer"})
	assert.Equal(t, 1, w.mem.Calls(inmemory.MethodDeleteMachine))
	assert.Empty(t, w.mem.VMs())
}
