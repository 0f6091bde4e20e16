package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

var (
	// grafanaInterval matches Grafana's interval variables ($__rate_interval).
	grafanaInterval = regexp.MustCompile(`\$__[a-z_]+`)
	// grafanaVariable matches a dashboard variable ($namespace, ${namespace}).
	grafanaVariable = regexp.MustCompile(`\$\{?[a-zA-Z_][a-zA-Z0-9_]*\}?`)
)

// TestDashboardQueriesParse checks that every query of the Grafana
// dashboard, deploy/grafana/machina.json, is PromQL that Prometheus
// parses: each becomes a recording rule for `promtool check rules`, with
// Grafana's variables replaced by values as Grafana would. That the metrics
// and labels they name are served by the manager, TestOperatorTools checks
// against a running one. promtool comes from Debian's prometheus package
// (hack/debian-deps.sh).
func TestDashboardQueriesParse(t *testing.T) {
	tool, err := exec.LookPath("promtool")
	require.NoError(t, err, "promtool is not installed: run hack/debian-deps.sh (Debian package prometheus)")
	queries := dashboardQueries(t, filepath.Join(repoRoot(t), "deploy", "grafana", "machina.json"))
	require.NotEmpty(t, queries)

	var rules []map[string]string
	for i, q := range queries {
		expr := q.expr
		if name, label, ok := strings.Cut(expr, " by ("); ok && strings.HasPrefix(q.panel, "variable ") {
			// label_values(metric, label), which dashboardQueries turns
			// into "metric by (label)".
			expr = "count by (" + label + " (" + name + ")"
		}
		expr = grafanaInterval.ReplaceAllString(expr, "5m")
		expr = grafanaVariable.ReplaceAllString(expr, "value")
		rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard:query_%d", i), "expr": expr})
	}
	data, err := yaml.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "dashboard.yaml"), data, 0o644))
	cmd := exec.Command(tool, "check", "rules", "dashboard.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check rules of the dashboard's queries:\n%s\n%s", out, data)
}
