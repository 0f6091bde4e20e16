package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Local is a control plane that a program, not a test, runs for as long as
// it likes: the demo, the chaos run and the benchmark each start one with
// StartLocal. Unlike an Env it outlives no testing.TB, keeps its data and
// certificates in a directory of the caller's, and leaves the API server's
// flags and the binaries' paths to the caller.
type Local struct {
	// Env is the running environment: AddUser, KubeConfig, and the API
	// server to stop and start again (ControlPlane.APIServer).
	Env *envtest.Environment
	// Admin reaches the API server as a cluster admin; Kubeconfig is a file
	// for it in the directory.
	Admin      *rest.Config
	Kubeconfig string
}

// LocalOptions say where a Local keeps its data, what it starts and how.
type LocalOptions struct {
	// Dir holds etcd's data (etcd/), the API server's certificates
	// (apiserver/: kept across a stop and start of the API server, so that
	// it comes back as the same endpoint) and admin.kubeconfig.
	Dir string
	// Assets holds etcd and kube-apiserver (hack/envtest-assets.sh builds
	// them).
	Assets string
	// CRDDir holds the CRDs to install; "" means the repository's
	// (CRDDir).
	CRDDir string
	// EtcdPath and APIServerPath, when set, are started instead of
	// Assets' binaries (the demo starts wrappers of them).
	EtcdPath, APIServerPath string
	// ConfigureAPIServer, when set, configures the API server before it
	// starts: flags (an audit log, say) and where its output goes.
	ConfigureAPIServer func(*envtest.APIServer)
	// StopTimeout bounds each component's graceful stop before envtest
	// kills it; 0 means a minute.
	StopTimeout time.Duration
}

// StartLocal starts etcd and kube-apiserver as o says, installs the CRDs and
// writes the admin kubeconfig. On an error it stops what it started.
func StartLocal(o LocalOptions) (*Local, error) {
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(o.Assets, name)); err != nil {
			return nil, fmt.Errorf("control plane binary: %w (hack/envtest-assets.sh builds them)", err)
		}
	}
	crds := o.CRDDir
	if crds == "" {
		var err error
		if crds, err = CRDDir(); err != nil {
			return nil, err
		}
	}
	etcd := &envtest.Etcd{Path: orDefault(o.EtcdPath, filepath.Join(o.Assets, "etcd")), DataDir: filepath.Join(o.Dir, "etcd")}
	api := &envtest.APIServer{Path: orDefault(o.APIServerPath, filepath.Join(o.Assets, "kube-apiserver")), CertDir: filepath.Join(o.Dir, "apiserver")}
	for _, d := range []string{etcd.DataDir, api.CertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if o.ConfigureAPIServer != nil {
		o.ConfigureAPIServer(api)
	}
	stop := o.StopTimeout
	if stop == 0 {
		stop = stopTimeout
	}
	noExisting := false
	env := &envtest.Environment{
		UseExistingCluster:       &noExisting,
		CRDDirectoryPaths:        []string{crds},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: startTimeout,
		// envtest sets every component's stop timeout from this one.
		ControlPlaneStopTimeout: stop,
		ControlPlane:            envtest.ControlPlane{Etcd: etcd, APIServer: api},
	}
	cfg, err := env.Start()
	if err != nil {
		// Start may have started etcd before the API server failed.
		return nil, errors.Join(fmt.Errorf("starting etcd and kube-apiserver: %w", err), env.Stop())
	}
	kubeconfig := filepath.Join(o.Dir, "admin.kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	return &Local{Env: env, Admin: cfg, Kubeconfig: kubeconfig}, nil
}

// Stop stops the API server and etcd.
func (l *Local) Stop() error { return l.Env.Stop() }

func orDefault(s, def string) string {
	if s != "" {
		return s
	}
	return def
}
