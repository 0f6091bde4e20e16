package testenv_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

func TestCRDDir(t *testing.T) {
	dir, err := testenv.CRDDir()
	require.NoError(t, err)
	for _, plural := range []string{"machines", "machineclasses", "machinesets", "machinedeployments"} {
		assert.FileExists(t, filepath.Join(dir, "machine.sapcloud.io_"+plural+".yaml"))
	}
}

// TestTwoClusters starts a control cluster with the CRDs and a plain target
// cluster, as two-cluster controller tests do, and checks that they are
// separate API servers and that each kubeconfig file reaches its own.
func TestTwoClusters(t *testing.T) {
	control := testenv.Start(t)
	target := testenv.Start(t, testenv.WithoutCRDs())
	ctx := t.Context()

	require.NoError(t, control.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-control"}}))
	err := target.Client.Get(ctx, client.ObjectKey{Name: "only-in-control"}, &corev1.Namespace{})
	assert.True(t, apierrors.IsNotFound(err), "target cluster must not see the control cluster's namespace: %v", err)

	var machines v1alpha1.MachineList
	require.NoError(t, control.Client.List(ctx, &machines), "control cluster serves the machine CRDs")
	err = target.Client.List(ctx, &machines)
	assert.True(t, meta.IsNoMatchError(err), "target cluster has no machine CRDs, got %v", err)

	for name, env := range map[string]*testenv.Env{"control": control, "target": target} {
		cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
		require.NoError(t, err, name)
		assert.Equal(t, strings.TrimSuffix(env.Config.Host, "/"), strings.TrimSuffix(cfg.Host, "/"), name)
		c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
		require.NoError(t, err, name)
		var nodes corev1.NodeList
		require.NoError(t, c.List(ctx, &nodes), "%s kubeconfig must authenticate", name)
	}
}

// TestStartWithoutAssets checks the message a developer sees when running
// `go test` without the binaries.
func TestStartWithoutAssets(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "")
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		testenv.Start(rec)
	}()
	<-done
	require.True(t, rec.failed, "Start must fail without KUBEBUILDER_ASSETS")
	assert.Contains(t, rec.msg, "KUBEBUILDER_ASSETS")
	assert.Contains(t, rec.msg, "make test")
	assert.Contains(t, rec.msg, "hack/envtest-assets.sh")
}

// fatalRecorder stands in for a testing.TB to observe a fatal failure
// without failing the real test.
type fatalRecorder struct {
	testing.TB
	failed bool
	msg    string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatal(args ...any) {
	r.failed, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}
