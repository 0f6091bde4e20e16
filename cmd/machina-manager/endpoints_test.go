package main

import (
	"crypto/tls"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/machina-io/machina/core/testenv"
)

// TestEndpoints runs the manager process with its default endpoints
// against a real API server and the inmemory driver: /metrics and /configz
// over HTTPS answer only a bearer token the API server authenticates and
// authorizes for the path, and /readyz answers "not ready" within its
// deadline while the driver is stopped (SIGSTOP) and cannot answer its
// Probe.
func TestEndpoints(t *testing.T) {
	managerBin, driverBin := buildBinaries(t)
	env := testenv.Start(t)
	ctx := t.Context()
	const ns = "endpoints"
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	socket := filepath.Join(socketDir(t), "driver.sock")
	driver := startDriver(t, driverBin, socket)
	metricsAddr, healthAddr := freeAddress(t), freeAddress(t)
	manager := start(t, "manager", managerBin,
		"--control-kubeconfig="+env.Kubeconfig,
		"--namespace="+ns,
		"--driver-endpoint=unix://"+socket,
		"--metrics-bind-address="+metricsAddr,
		"--health-probe-bind-address="+healthAddr,
		"--leader-elect=false",
	)
	requireHTTP(t, manager, "http://"+healthAddr+"/readyz", http.StatusOK)

	// Two callers: a reader allowed to get /metrics (as
	// deploy/monitoring/metrics_reader.yaml allows Prometheus) and a
	// stranger with a valid token and no such right.
	cs, err := kubernetes.NewForConfig(env.Config)
	require.NoError(t, err)
	token := func(name string) string {
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		require.NoError(t, err)
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		require.NoError(t, err)
		return tr.Status.Token
	}
	reader, stranger := token("reader"), token("stranger")
	require.NoError(t, env.Client.Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}))
	require.NoError(t, env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: ns}}}))

	// The certificate is self-signed (no --metrics-cert-dir).
	httpsClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the manager's self-signed certificate
	}}
	get := func(path, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+metricsAddr+path, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := httpsClient.Do(req)
		require.NoError(t, err)
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}

	t.Run("metrics need a token allowed to read them", func(t *testing.T) {
		code, _ := get("/metrics", "")
		assert.Equal(t, http.StatusUnauthorized, code, "anonymous")
		// controller-runtime's filter answers 500 when the TokenReview
		// fails, as it does for a token that is no JWT: refused either way.
		code, body := get("/metrics", "not-a-token")
		assert.Contains(t, []int{http.StatusUnauthorized, http.StatusInternalServerError}, code, "a token the API server does not know")
		assert.NotContains(t, body, "controller_runtime_reconcile_total")
		code, _ = get("/metrics", stranger)
		assert.Equal(t, http.StatusForbidden, code, "a token without the right")
		code, _ = get("/configz", "")
		assert.Equal(t, http.StatusUnauthorized, code, "/configz anonymous")
		code, _ = get("/configz", reader)
		assert.Equal(t, http.StatusForbidden, code, "/configz is not /metrics")
		code, body = get("/metrics", reader)
		assert.Equal(t, http.StatusOK, code)
		assert.True(t, strings.Contains(body, "controller_runtime_reconcile_total"), "the reader gets the metrics")

		// Plain HTTP gets no metrics.
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err == nil {
			_ = resp.Body.Close()
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP on the HTTPS port")
		}
	})

	t.Run("readyz answers in time while the driver is stopped", func(t *testing.T) {
		require.NoError(t, syscall.Kill(driver.Pid(), syscall.SIGSTOP))
		stopped := true
		t.Cleanup(func() {
			if stopped {
				_ = syscall.Kill(driver.Pid(), syscall.SIGCONT)
			}
		})
		// A kubelet waits one second by default; each check has 500ms.
		probe := &http.Client{Timeout: 5 * time.Second}
		var slowest time.Duration
		var last string
		require.Eventually(t, func() bool {
			began := time.Now()
			resp, err := probe.Get("http://" + healthAddr + "/readyz?verbose")
			slowest = max(slowest, time.Since(began))
			if err != nil {
				last = err.Error()
				return false
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			last = string(body)
			return resp.StatusCode == http.StatusInternalServerError && strings.Contains(last, "[-]driver failed")
		}, 30*time.Second, 200*time.Millisecond, "a stopped driver makes the manager not ready; last answer: %s", last)
		assert.Less(t, slowest, 1500*time.Millisecond, "/readyz answers within its deadline while the driver is stopped")
		require.NoError(t, syscall.Kill(driver.Pid(), syscall.SIGCONT))
		stopped = false
		requireHTTP(t, manager, "http://"+healthAddr+"/readyz", http.StatusOK)
	})
}
