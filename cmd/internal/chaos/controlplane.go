package chaos

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/machina-io/machina/core/testenv"
)

// auditPolicy records every request at the Metadata level: who did what to
// which object, never a body. A canary in the audit log would mean a
// secret value reached a URL, a name or a label.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// controlPlane is a local etcd and kube-apiserver with machina's CRDs. The
// API server can be stopped and started again on the same port, with the
// same certificates, against the same etcd: an outage as clients see it.
type controlPlane struct {
	env *envtest.Environment
	api *envtest.APIServer
	// admin reaches the API server as a cluster admin; kubeconfig is a file
	// for it.
	admin      *rest.Config
	kubeconfig string
	// logs are the API server's output and its audit log.
	apiLog *os.File
	logs   []string
}

// startControlPlane starts etcd and kube-apiserver from assets with their
// data under dir and their logs in logDir.
func startControlPlane(dir, logDir, assets string) (*controlPlane, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	cp := &controlPlane{}
	apiLogPath, auditLogPath := filepath.Join(logDir, "kube-apiserver.log"), filepath.Join(logDir, "audit.log")
	var err error
	if cp.apiLog, err = os.Create(apiLogPath); err != nil {
		return nil, err
	}
	cp.logs = []string{apiLogPath, auditLogPath}
	// The API server's certificates stay in dir across a Stop and Start
	// (testenv.Local), and the secure port is remembered after the first
	// start, so the restarted API server is the same endpoint for every
	// client.
	local, err := testenv.StartLocal(testenv.LocalOptions{
		Dir:    dir,
		Assets: assets,
		ConfigureAPIServer: func(api *envtest.APIServer) {
			api.Out, api.Err = cp.apiLog, cp.apiLog
			api.Configure().
				Set("audit-policy-file", policy).
				Set("audit-log-path", auditLogPath).
				Set("audit-log-format", "json").
				Set("audit-log-mode", "blocking")
		},
		StopTimeout: apiServerStopTimeout,
	})
	if err != nil {
		return nil, errors.Join(err, cp.apiLog.Close())
	}
	cp.env, cp.api, cp.admin, cp.kubeconfig = local.Env, local.Env.ControlPlane.APIServer, local.Admin, local.Kubeconfig
	return cp, nil
}

// apiServerStopTimeout is how long kube-apiserver may take to shut down
// gracefully before envtest kills it. With the manager's and the driver's
// watches open it often takes longer than that; the outage has begun
// either way.
const apiServerStopTimeout = 10 * time.Second

// stopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after
// apiServerStopTimeout) and waits until its port refuses connections; etcd
// keeps running.
func (c *controlPlane) stopAPIServer() error {
	fmt.Fprintf(c.apiLog, "---- chaos: stopping kube-apiserver at %s ----\n", time.Now().UTC().Format(time.RFC3339Nano))
	if err := c.api.Stop(); err != nil {
		if !killedAfterTimeout(err) {
			return err
		}
		fmt.Fprintf(c.apiLog, "---- chaos: kube-apiserver did not stop within %s of SIGTERM and was killed ----\n", apiServerStopTimeout)
	}
	u, err := url.Parse(c.admin.Host)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", u.Host, time.Second)
		if err != nil {
			return nil
		}
		_ = conn.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("kube-apiserver still accepts connections on %s 30s after it was stopped", u.Host)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startAPIServer starts kube-apiserver again and waits for it to be healthy.
func (c *controlPlane) startAPIServer() error {
	fmt.Fprintf(c.apiLog, "---- chaos: starting kube-apiserver at %s ----\n", time.Now().UTC().Format(time.RFC3339Nano))
	return c.api.Start()
}

// killedAfterTimeout tells whether err is envtest's report of a component
// that did not stop within its timeout after SIGTERM and was sent SIGKILL:
// stopped either way.
func killedAfterTimeout(err error) bool {
	return strings.HasPrefix(err.Error(), "timeout waiting for process ")
}

// stop stops the API server and etcd. A component that had to be killed
// after its stop timeout is stopped too.
func (c *controlPlane) stop() error {
	err := c.env.Stop()
	if err != nil && killedAfterTimeout(err) {
		err = nil
	}
	return errors.Join(err, c.apiLog.Close())
}
