package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/machina-io/machina/bench/internal/audit"
	"github.com/machina-io/machina/core/testenv"
)

// The users the manager and the driver authenticate as. Separate users let
// the audit log tell the manager's requests from the simulated kubelet's.
const (
	managerUser = "machina-manager"
	driverUser  = "machina-driver-virtualnode"
)

// controlPlane is a local etcd and kube-apiserver with machina's CRDs and
// an audit log of the manager's and the driver's requests.
type controlPlane struct {
	env *envtest.Environment
	// admin reaches the API server as a cluster admin (not audited).
	admin *rest.Config
	// auditLog is the path of the audit log.
	auditLog string
	// apiServerLog is the API server's output (apiserver.log in the work
	// directory); closed by stop.
	apiServerLog *os.File
	// kubeconfigs of the manager and the driver users.
	managerKubeconfig, driverKubeconfig string
}

// startControlPlane starts etcd and kube-apiserver from assets with their
// data under dir and installs the CRDs of crdDir. The API server writes its
// log to dir/apiserver.log, at verbosity (--v) when it is above 0: at 1 it
// says, for one, when its watch cache closes a watch whose client falls
// behind ("Forcing ... watcher close due to unresponsiveness").
func startControlPlane(dir, assets, crdDir string, verbosity int) (*controlPlane, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(audit.Policy(managerUser, driverUser)), 0o600); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "apiserver.log"))
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{auditLog: filepath.Join(dir, "audit.log"), apiServerLog: logFile}
	local, err := testenv.StartLocal(testenv.LocalOptions{
		Dir:    dir,
		Assets: assets,
		CRDDir: crdDir,
		// The log backend in blocking mode writes each event before the
		// response is sent, so the log is complete when a scenario ends.
		// Only the two users are audited (see audit.Policy).
		ConfigureAPIServer: func(api *envtest.APIServer) {
			api.Out, api.Err = logFile, logFile
			if verbosity > 0 {
				api.Configure().Set("v", strconv.Itoa(verbosity))
			}
			api.Configure().
				Set("audit-policy-file", policy).
				Set("audit-log-path", cp.auditLog).
				Set("audit-log-format", "json").
				Set("audit-log-mode", "blocking").
				// The log is never rotated: a rotation within a scenario
				// (the default is at 100 MB, which a fleet of a few
				// thousand machines passes) would move the bytes the
				// scenario's offsets point at.
				Set("audit-log-maxsize", "1000000")
		},
	})
	if err != nil {
		return nil, errors.Join(err, logFile.Close())
	}
	cp.env, cp.admin = local.Env, local.Admin

	for _, u := range []struct {
		name string
		path *string
	}{{managerUser, &cp.managerKubeconfig}, {driverUser, &cp.driverKubeconfig}} {
		// system:masters: the benchmark measures requests, not RBAC; the
		// demo and the end-to-end tests run with deploy/'s RBAC.
		user, err := cp.env.AddUser(envtest.User{Name: u.name, Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("adding user %s: %w", u.name, err), cp.stop())
		}
		kc, err := user.KubeConfig()
		if err != nil {
			return nil, errors.Join(err, cp.stop())
		}
		*u.path = filepath.Join(dir, u.name+".kubeconfig")
		if err := os.WriteFile(*u.path, kc, 0o600); err != nil {
			return nil, errors.Join(err, cp.stop())
		}
	}
	return cp, nil
}

// stop stops the API server and etcd.
func (c *controlPlane) stop() error { return errors.Join(c.env.Stop(), c.apiServerLog.Close()) }
