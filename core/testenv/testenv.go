// Package testenv starts a real kube-apiserver and etcd (controller-runtime's
// envtest) for tests, with machina's CRDs installed. Every controller test
// uses it; a two-cluster test starts two Envs. The programs that run a
// control plane of their own (the demo, the chaos suite, the benchmark)
// start it with StartLocal.
//
// The binaries come from KUBEBUILDER_ASSETS, which `make test` sets; run a
// single package with
//
//	KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh) go test ./core/...
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	machinaiov1alpha1 "github.com/machina-io/machina/core/api/machina/v1alpha1"
	mcfgv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
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
	// Scheme knows the client-go built-in types, machine.sapcloud.io/v1alpha1
	// and machineconfiguration.openshift.io/v1.
	Scheme *runtime.Scheme
	// Kubeconfig is the path of a kubeconfig file for Config, for code and
	// processes that take a --kubeconfig flag.
	Kubeconfig string

	env     *envtest.Environment
	certDir string // set by Restartable
}

// Option changes how Start sets up the environment.
type Option func(*options)

type options struct {
	withoutCRDs bool
	certDir     string
}

// Restartable keeps the API server's certificates in dir, so that
// StopAPIServer and StartAPIServer can take it away and bring it back on
// the same address with the same certificates: clients made before the
// outage work again after it, as with a real API server that restarts.
func Restartable(dir string) Option {
	return func(o *options) { o.certDir = dir }
}

// WithoutCRDs starts a plain API server without machina's CRDs, for example
// the target cluster of a two-cluster test.
func WithoutCRDs() Option {
	return func(o *options) { o.withoutCRDs = true }
}

// Assets returns the directory of the control plane's binaries
// (KUBEBUILDER_ASSETS, which `make test` sets), or fails the test saying
// how to set it.
func Assets(t testing.TB) string {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("testenv: KUBEBUILDER_ASSETS is not set: run through make test, " +
			"or set KUBEBUILDER_ASSETS=$(hack/envtest-assets.sh)")
	}
	return assets
}

// Start starts etcd and a kube-apiserver for the test and stops them when the
// test ends. It fails the test when the environment cannot start.
func Start(t testing.TB, opts ...Option) *Env {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}

	Assets(t)

	scheme, err := NewScheme()
	if err != nil {
		t.Fatalf("testenv: building scheme: %v", err)
	}

	env := &envtest.Environment{Scheme: scheme}
	if o.certDir != "" {
		env.ControlPlane.APIServer = &envtest.APIServer{CertDir: o.certDir}
	}
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

	return &Env{Config: cfg, Client: c, Scheme: scheme, Kubeconfig: kubeconfig, env: env, certDir: o.certDir}
}

// StopAPIServer kills the kube-apiserver (SIGKILL), leaving etcd running:
// an outage of the API server. A graceful stop is no outage (clients are
// told to go elsewhere) and may wait a minute for open watches. Start the
// Env with Restartable to bring it back.
func (e *Env) StopAPIServer() error {
	if e.certDir == "" {
		return errors.New("testenv: StopAPIServer needs an Env started with Restartable")
	}
	pids, err := processesWithArg("kube-apiserver", e.certDir)
	if err != nil {
		return err
	}
	if len(pids) != 1 {
		return fmt.Errorf("testenv: want one kube-apiserver with %s, found %d", e.certDir, len(pids))
	}
	if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
		return fmt.Errorf("testenv: killing kube-apiserver: %w", err)
	}
	// envtest sees the process gone and forgets it.
	return e.env.ControlPlane.GetAPIServer().Stop()
}

// processesWithArg lists the processes whose command is named name and
// has an argument containing arg.
func processesWithArg(name, arg string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("testenv: listing processes: %w", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue // gone meanwhile
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == 0 || filepath.Base(args[0]) != name {
			continue
		}
		for _, a := range args[1:] {
			if strings.Contains(a, arg) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}

// StartAPIServer starts the kube-apiserver stopped by StopAPIServer again,
// on the same address, and returns once it serves.
func (e *Env) StartAPIServer() error {
	return e.env.ControlPlane.GetAPIServer().Start()
}

// NewScheme returns a scheme with the client-go built-in types,
// machine.sapcloud.io/v1alpha1, machineconfiguration.openshift.io/v1 and
// machina.io/v1alpha1.
func NewScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := machinav1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := mcfgv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := machinaiov1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}
