// Package testenv starts a real kube-apiserver and etcd (controller-runtime's
// envtest) for tests, with machina's CRDs installed. Every controller test
// uses it; a two-cluster test starts two Envs.
//
// The binaries come from KUBEBUILDER_ASSETS, which `make test` sets; run a
// single package with
//
//	KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh) go test ./core/...
package testenv

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	machinav1alpha1 "github.com/machina-io/machina/core/api/v1alpha1"
)

// Timeouts for starting and stopping etcd and the kube-apiserver. They are
// longer than envtest's 20s defaults because tests run while other packages
// compile on the same small machine. The envtest environment variables
// (KUBEBUILDER_CONTROLPLANE_START_TIMEOUT, ..._STOP_TIMEOUT) still win.
const (
	startTimeout = 2 * time.Minute
	stopTimeout  = time.Minute
)

// Env is a running API server with a client for it.
type Env struct {
	// Config reaches the API server as a cluster admin.
	Config *rest.Config
	// Client is a client for Config using Scheme; it reads straight from the
	// API server (no cache).
	Client client.Client
	// Scheme knows the client-go built-in types and machine.sapcloud.io/v1alpha1.
	Scheme *runtime.Scheme
	// Kubeconfig is the path of a kubeconfig file for Config, for code and
	// processes that take a --kubeconfig flag.
	Kubeconfig string
}

// Option changes how Start sets up the environment.
type Option func(*options)

type options struct {
	withoutCRDs bool
}

// WithoutCRDs starts a plain API server without machina's CRDs, for example
// the target cluster of a two-cluster test.
func WithoutCRDs() Option {
	return func(o *options) { o.withoutCRDs = true }
}

// Start starts etcd and a kube-apiserver for the test and stops them when the
// test ends. It fails the test when the environment cannot start.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}

	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Fatal("testenv: KUBEBUILDER_ASSETS is not set: run through make test, " +
			"or set KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)")
	}

	scheme, err := NewScheme()
	if err != nil {
		t.Fatalf("testenv: building scheme: %v", err)
	}

	env := &envtest.Environment{Scheme: scheme}
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT") == "" {
		env.ControlPlaneStartTimeout = startTimeout
	}
	if os.Getenv("KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT") == "" {
		env.ControlPlaneStopTimeout = stopTimeout
	}
	if !o.withoutCRDs {
		dir, err := CRDDir()
		if err != nil {
			t.Fatalf("testenv: %v", err)
		}
		env.CRDDirectoryPaths = []string{dir}
		env.ErrorIfCRDPathMissing = true
	}

	cfg, err := env.Start()
	if err != nil {
		// Start may have launched etcd before the API server failed.
		_ = env.Stop()
		t.Fatalf("testenv: starting kube-apiserver and etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("testenv: stopping kube-apiserver and etcd: %v", err)
		}
	})

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("testenv: creating client: %v", err)
	}

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, env.KubeConfig, 0o600); err != nil {
		t.Fatalf("testenv: writing kubeconfig: %v", err)
	}

	return &Env{Config: cfg, Client: c, Scheme: scheme, Kubeconfig: kubeconfig}
}

// NewScheme returns a scheme with the client-go built-in types and
// machine.sapcloud.io/v1alpha1.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := machinav1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}
