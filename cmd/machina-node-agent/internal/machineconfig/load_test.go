package machineconfig

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcv1 "github.com/machina-io/machina/core/api/machineconfiguration/v1"
	"github.com/machina-io/machina/core/testenv"
)

// TestLoadParsesOncePerName: the agent reads and parses a rendered
// MachineConfig once per change of desiredConfig, not on every pass. The
// configuration is deleted from the API server after the first load: a
// second load of the same name that went to the API server again would
// fail with NotFound. Another name is read.
func TestLoadParsesOncePerName(t *testing.T) {
	env := testenv.Start(t)
	a := New(env.Client, env.Client, Options{})
	mc := &mcv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "rendered-once",
		Annotations: map[string]string{mcv1.RenderedFromPoolAnnotation: "worker"}}}
	mc.Spec.KernelArguments = []string{"nosmt"}
	mc.Spec.Config.Raw = []byte(`{"ignition":{"version":"3.5.0"},"storage":{"files":[{"path":"/etc/once","contents":{"source":"data:,x"}}]}}`)
	require.NoError(t, env.Client.Create(t.Context(), mc))

	first, err := a.load(t.Context(), "rendered-once")
	require.NoError(t, err)
	assert.Equal(t, "worker", first.pool)
	assert.Equal(t, []string{"nosmt"}, first.spec.KernelArguments)
	require.Len(t, first.ign.Storage.Files, 1)

	require.NoError(t, env.Client.Delete(t.Context(), mc))
	again, err := a.load(t.Context(), "rendered-once")
	require.NoError(t, err, "the second load of a name is served from what was parsed")
	assert.Same(t, first, again)

	_, err = a.load(t.Context(), "rendered-other")
	var nf *notFoundError
	assert.ErrorAs(t, err, &nf, "another name is read from the API server")
}

// TestBackoff: a Degraded configuration is tried again after
// RetryInterval, doubling with each failure, at most MaxRetryInterval.
func TestBackoff(t *testing.T) {
	a := New(nil, nil, Options{RetryInterval: time.Second, MaxRetryInterval: 10 * time.Second})
	var got []time.Duration
	for failures := 1; failures <= 6; failures++ {
		got = append(got, a.backoff(failures))
	}
	assert.Equal(t, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}, got)
}
