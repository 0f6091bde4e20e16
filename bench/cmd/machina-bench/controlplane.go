package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/machina-io/machina/bench/internal/audit"
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
	// kubeconfigs of the manager and the driver users.
	managerKubeconfig, driverKubeconfig string
}

// startControlPlane starts etcd and kube-apiserver from assets with their
// data under dir and installs the CRDs of crdDir.
func startControlPlane(dir, assets, crdDir string) (*controlPlane, error) {
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, name)); err != nil {
			return nil, fmt.Errorf("control plane binary: %w (hack/envtest-assets.sh builds them)", err)
		}
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(audit.Policy(managerUser, driverUser)), 0o600); err != nil {
		return nil, err
	}
	cp := &controlPlane{auditLog: filepath.Join(dir, "audit.log")}

	api := &envtest.APIServer{Path: filepath.Join(assets, "kube-apiserver"), CertDir: filepath.Join(dir, "apiserver")}
	// The log backend in blocking mode writes each event before the
	// response is sent, so the log is complete when a scenario ends. Only
	// the two users are audited (see audit.Policy).
	api.Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", cp.auditLog).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking").
		// The log is never rotated: a rotation within a scenario (the
		// default is at 100 MB, which a fleet of a few thousand machines
		// passes) would move the bytes the scenario's offsets point at.
		Set("audit-log-maxsize", "1000000")
	noExisting := false
	cp.env = &envtest.Environment{
		UseExistingCluster:       &noExisting,
		CRDDirectoryPaths:        []string{crdDir},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
		ControlPlane: envtest.ControlPlane{
			Etcd:      &envtest.Etcd{Path: filepath.Join(assets, "etcd"), DataDir: filepath.Join(dir, "etcd")},
			APIServer: api,
		},
	}
	for _, d := range []string{cp.env.ControlPlane.Etcd.DataDir, api.CertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	cfg, err := cp.env.Start()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("starting etcd and kube-apiserver: %w", err), cp.env.Stop())
	}
	cp.admin = cfg

	for _, u := range []struct {
		name string
		path *string
	}{{managerUser, &cp.managerKubeconfig}, {driverUser, &cp.driverKubeconfig}} {
		// system:masters: the benchmark measures requests, not RBAC; the
		// demo and the end-to-end tests run with deploy/'s RBAC.
		user, err := cp.env.AddUser(envtest.User{Name: u.name, Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("adding user %s: %w", u.name, err), cp.env.Stop())
		}
		kc, err := user.KubeConfig()
		if err != nil {
			return nil, errors.Join(err, cp.env.Stop())
		}
		*u.path = filepath.Join(dir, u.name+".kubeconfig")
		if err := os.WriteFile(*u.path, kc, 0o600); err != nil {
			return nil, errors.Join(err, cp.env.Stop())
		}
	}
	return cp, nil
}

// stop stops the API server and etcd.
func (c *controlPlane) stop() error { return c.env.Stop() }
