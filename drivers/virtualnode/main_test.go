package virtualnode

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The tests of this package share one real kube-apiserver and etcd.
var (
	testEnv    *envtest.Environment
	testConfig *rest.Config
	testClient kubernetes.Interface
)

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	// Fuzzing (make fuzz) runs only the fuzz target, in worker processes
	// that each run TestMain: none of them needs an API server.
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		return m.Run()
	}
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		return m.Run()
	}
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		// Outside `make test`, find (or build) the assets the way it does.
		out, err := exec.Command("../../hack/envtest-assets.sh").Output()
		if err != nil {
			fmt.Fprintf(os.Stderr, "KUBEBUILDER_ASSETS is unset and hack/envtest-assets.sh failed: %v\n", err)
			return 1
		}
		os.Setenv("KUBEBUILDER_ASSETS", strings.TrimSpace(string(out)))
	}
	testEnv = &envtest.Environment{}
	cfg, err := testEnv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting the test API server: %v\n", err)
		return 1
	}
	defer func() {
		if err := testEnv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the test API server: %v\n", err)
		}
	}()
	testConfig = cfg
	testClient = kubernetes.NewForConfigOrDie(cfg)
	return m.Run()
}
