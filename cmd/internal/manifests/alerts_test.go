package manifests_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// promtool returns the path of Prometheus's promtool, failing the test when
// it is not installed: it comes from Debian's prometheus package, which
// hack/debian-deps.sh installs (make test runs it).
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is not installed: run hack/debian-deps.sh (Debian package prometheus)")
	return path
}

// TestAlertRules runs the unit tests of the alerts, deploy/monitoring/
// alerts_test.yaml, with `promtool test rules` against the groups of the
// PrometheusRule that deploy/monitoring renders, after `promtool check
// rules` has checked them. Every alert the operators' guide names is there.
func TestAlertRules(t *testing.T) {
	tool := promtool(t)
	objs := render(t, "deploy/monitoring")
	rule := findObject(t, objs, "PrometheusRule", namespace, "machina-manager")
	findObject(t, objs, "ServiceMonitor", namespace, "machina-manager")

	groups, found, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
	require.NoError(t, err)
	require.True(t, found)
	var alerts []string
	for _, g := range groups {
		rules, _, err := unstructured.NestedSlice(g.(map[string]any), "rules")
		require.NoError(t, err)
		for _, r := range rules {
			alerts = append(alerts, r.(map[string]any)["alert"].(string))
		}
	}
	assert.ElementsMatch(t, []string{
		"MachinaManagerDown", "MachinaDriverNotReady", "MachinaAPIServerFreeze", "MachinaMachineSetFrozen",
		"MachinaMachineDeletionStuck", "MachinaMeltdown", "MachinaRolloutStalled", "MachinaMachineConfigPoolDegraded",
	}, alerts)

	dir := t.TempDir()
	data, err := yaml.Marshal(map[string]any{"groups": groups})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rules.yaml"), data, 0o644))
	tests, err := os.ReadFile(repoDir(t, "deploy/monitoring/alerts_test.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644))

	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(tool, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "promtool %v:\n%s", args, out)
	}
}
