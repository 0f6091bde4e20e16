package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/machina-io/machina/core/testenv"
)

const (
	// realAssetsEnv tells a wrapper process (execAsset) where the real
	// control plane binaries are.
	realAssetsEnv = "MACHINA_DEMO_REAL_ASSETS"
	// demoPIDEnv is the demo's process ID, for a wrapper to check that its
	// parent is still alive.
	demoPIDEnv = "MACHINA_DEMO_PID"
)

// wrappedAssets are the binaries envtest starts.
var wrappedAssets = []string{"etcd", "kube-apiserver"}

// assetName returns the control plane binary a program path names, or "".
func assetName(arg0 string) string {
	base := filepath.Base(arg0)
	for _, a := range wrappedAssets {
		if base == a {
			return a
		}
	}
	return ""
}

// controlPlane is a local etcd and kube-apiserver with machina's CRDs.
type controlPlane struct {
	env *envtest.Environment
	// cfg reaches the API server as a cluster admin.
	cfg *rest.Config
	// kubeconfig is an admin kubeconfig file for cfg.
	kubeconfig string
}

// startControlPlane starts etcd and kube-apiserver from assets, keeping
// their data under dir, and installs the CRDs of crdDir.
func startControlPlane(dir, assets, crdDir string) (*controlPlane, error) {
	// The scenarios run kubectl from assets too.
	if _, err := os.Stat(filepath.Join(assets, "kubectl")); err != nil {
		return nil, fmt.Errorf("control plane binary: %w (hack/envtest-assets.sh builds them)", err)
	}
	paths, err := assetPaths(dir, assets)
	if err != nil {
		return nil, err
	}
	local, err := testenv.StartLocal(testenv.LocalOptions{
		Dir:           dir,
		Assets:        assets,
		CRDDir:        crdDir,
		EtcdPath:      paths["etcd"],
		APIServerPath: paths["kube-apiserver"],
	})
	if err != nil {
		return nil, err
	}
	return &controlPlane{env: local.Env, cfg: local.Admin, kubeconfig: local.Kubeconfig}, nil
}

// stop stops the API server and etcd.
func (c *controlPlane) stop() error {
	return c.env.Stop()
}

// assetPaths returns the paths envtest starts etcd and kube-apiserver by.
// On Linux they are symlinks in dir to the demo's own executable, which
// sets the parent-death signal and then runs the real binary (execAsset).
func assetPaths(dir, assets string) (map[string]string, error) {
	paths := map[string]string{}
	if runtime.GOOS != "linux" {
		for _, name := range wrappedAssets {
			paths[name] = filepath.Join(assets, name)
		}
		return paths, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the demo executable: %w", err)
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o700); err != nil {
		return nil, err
	}
	for _, name := range wrappedAssets {
		link := filepath.Join(bin, name)
		if err := os.Symlink(self, link); err != nil {
			return nil, err
		}
		paths[name] = link
	}
	abs, err := filepath.Abs(assets)
	if err != nil {
		return nil, err
	}
	// Inherited by the processes envtest starts.
	if err := os.Setenv(realAssetsEnv, abs); err != nil {
		return nil, err
	}
	return paths, os.Setenv(demoPIDEnv, strconv.Itoa(os.Getpid()))
}
