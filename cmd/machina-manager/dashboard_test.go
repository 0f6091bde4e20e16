package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/machina-io/machina/core/api/v1alpha1"
	"github.com/machina-io/machina/core/testenv"
)

// TestOperatorTools checks the operators' tools against a running manager.
// The dashboard, deploy/grafana/machina.json: every metric a panel or
// variable queries is on the manager's /metrics, with every label the query
// matches on, groups by or names in a legend. The kubectl-machina binary:
// its verbs read the manager's objects. The manager and the inmemory driver
// run as processes; the test
// walks a MachineDeployment of two machines through creation (one create
// failing with UNAVAILABLE first), join, and a scale-down to one with a drain, so
// that the metrics that only appear once something happened are there.
func TestOperatorTools(t *testing.T) {
	queries := dashboardQueries(t, filepath.Join(repoRoot(t), "deploy", "grafana", "machina.json"))
	require.NotEmpty(t, queries)

	managerBin, driverBin := buildBinaries(t)

	env := testenv.Start(t)
	c := env.Client
	ctx := t.Context()
	const ns = "dashboard"
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))

	socket := filepath.Join(socketDir(t), "driver.sock")
	endpoint := "unix://" + socket
	startDriver(t, driverBin, socket, "--fault=CreateMachine:code=UNAVAILABLE,count=1")
	metricsAddr, healthAddr := freeAddress(t), freeAddress(t)
	manager := start(t, "manager", managerBin, managerFlags(env.Kubeconfig, ns, endpoint, metricsAddr, healthAddr,
		"--leader-elect-lease-duration=4s",
		"--leader-elect-renew-deadline=3s",
		"--leader-elect-retry-period=500ms",
	)...)
	requireHTTP(t, manager, "http://"+healthAddr+"/readyz", 200)

	createClass(t, c, ns, "class", "secret", map[string][]byte{"userData": []byte("#cloud-config\n")})
	labels := map[string]string{"name": "web"}
	d := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: 2,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1alpha1.MachineTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       v1alpha1.MachineSpec{Class: v1alpha1.ClassSpec{Kind: "MachineClass", Name: "class"}},
			},
		},
	}
	require.NoError(t, c.Create(ctx, d))

	// The machines get their VMs (one after the injected UNAVAILABLE), the
	// test registers their Nodes as kubelets would, and they join.
	var machines []v1alpha1.Machine
	require.Eventually(t, func() bool {
		var l v1alpha1.MachineList
		if c.List(ctx, &l, client.InNamespace(ns)) != nil || len(l.Items) != 2 {
			return false
		}
		machines = l.Items
		for _, m := range machines {
			if m.Spec.ProviderID == "" || m.Labels[v1alpha1.NodeLabelKey] == "" {
				return false
			}
		}
		return true
	}, waitFor, poll, "the deployment's machines never got their VMs")
	for i := range machines {
		registerNode(t, c, machines[i].Labels[v1alpha1.NodeLabelKey])
	}
	for i := range machines {
		requirePhase(t, c, &machines[i], v1alpha1.MachineRunning)
	}

	// A scale-down to one deletes a machine: its Node is drained. The other
	// stays, so that the per-machine state metrics have a series.
	// A merge patch, not an update: the manager writes the deployment too, and
	// an update from a stale read would lose to it with a conflict.
	require.NoError(t, c.Patch(ctx, d, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":1}}`))))
	require.Eventually(t, func() bool {
		var l v1alpha1.MachineList
		return c.List(ctx, &l, client.InNamespace(ns)) == nil && len(l.Items) == 1
	}, waitFor, poll, "the scale-down never deleted a machine")

	t.Run("dashboard metrics", func(t *testing.T) {
		families := scrape(t, "http://"+metricsAddr+"/metrics")
		for _, q := range queries {
			for _, problem := range q.check(families) {
				t.Errorf("panel %q, query %s: %s", q.panel, q.expr, problem)
			}
		}
	})

	t.Run("kubectl machina", func(t *testing.T) {
		plugin := goBuild(t, filepath.Join(repoRoot(t), "cmd"), "./kubectl-machina", t.TempDir(), "kubectl-machina")
		var l v1alpha1.MachineList
		require.NoError(t, c.List(ctx, &l, client.InNamespace(ns)))
		require.Len(t, l.Items, 1)
		m := l.Items[0]
		node := m.Labels[v1alpha1.NodeLabelKey]
		run := func(wantCode int, args ...string) string {
			t.Helper()
			cmd := exec.Command(plugin, append([]string{"--kubeconfig=" + env.Kubeconfig, "-n", ns}, args...)...)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else {
				require.NoError(t, err)
			}
			require.Equal(t, wantCode, code, "kubectl machina %s:\n%s", strings.Join(args, " "), out)
			return string(out)
		}

		out := run(0, "tree", "web")
		assert.Contains(t, out, "MachineDeployment/web ")
		assert.Contains(t, out, "Machine/"+m.Name+" ")
		assert.Regexp(t, `Node/`+regexp.QuoteMeta(node)+` +Ready`, out)

		out = run(0, "why", m.Name)
		assert.Contains(t, out, "Waiting for:\n  nothing: the machine is Running and its Node healthy\n")

		out = run(0, "rollout", "status", "web", "--timeout=1m")
		assert.Equal(t, "machinedeployment \"web\" successfully rolled out\n", out)
		out = run(0, "rollout", "history", "web")
		assert.Regexp(t, `(?m)^1 +web-`, out)
		out = run(1, "rollout", "undo", "web")
		assert.Contains(t, out, "error: no rollout history found")

		out = run(0, "scale-down", "--dry-run", "web", "--replicas=0", "-o", "name")
		assert.Equal(t, "machine.machine.sapcloud.io/"+m.Name+"\n", out)
		out = run(0, "drain", "--dry-run", node)
		assert.Contains(t, out, "Node "+node+" (Ready): the drain evicts 0 pods in 0 steps; 0 pods stay.")
	})
}

// promQuery is one PromQL expression of the dashboard.
type promQuery struct {
	panel, expr, legend string
}

// dashboardQueries reads every expression of the dashboard: the targets of
// its panels and the queries of its variables.
func dashboardQueries(t *testing.T, path string) []promQuery {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr         string `json:"expr"`
				LegendFormat string `json:"legendFormat"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Type       string `json:"type"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash), "%s is not a dashboard", path)
	var out []promQuery
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			require.NotEmpty(t, tg.Expr, "panel %q has a target without expr", p.Title)
			out = append(out, promQuery{panel: p.Title, expr: tg.Expr, legend: tg.LegendFormat})
		}
	}
	labelValues := regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		require.NotNil(t, m, "variable %s: only label_values(metric, label) is understood, not %q", v.Name, v.Definition)
		out = append(out, promQuery{panel: "variable " + v.Name, expr: m[1] + " by (" + m[2] + ")"})
	}
	return out
}

// series are the label names of every series name on /metrics; a
// histogram's _bucket, _sum and _count are series of their own, its buckets
// with "le".
type series map[string][]string

func scrape(t *testing.T, url string) series {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(httpGet(t, url)))
	require.NoError(t, err)
	out := series{}
	add := func(name string, labels []string) {
		for _, l := range labels {
			if !slices.Contains(out[name], l) {
				out[name] = append(out[name], l)
			}
		}
		if _, ok := out[name]; !ok {
			out[name] = []string{}
		}
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName())
			}
			switch f.GetType().String() {
			case "HISTOGRAM":
				add(name+"_bucket", append(slices.Clone(labels), "le"))
				add(name+"_sum", labels)
				add(name+"_count", labels)
			case "SUMMARY":
				add(name, append(slices.Clone(labels), "quantile"))
				add(name+"_sum", labels)
				add(name+"_count", labels)
			default:
				add(name, labels)
			}
		}
	}
	return out
}

var (
	// grouping matches "by (a, b)" and "without (a)".
	grouping = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	// selector matches a metric name with its optional label matchers.
	selector = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?`)
	// matcher matches one label matcher.
	matcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"`)
	// legendLabel matches {{label}} in a legend.
	legendLabel = regexp.MustCompile(`\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
	// rangeOrInterval matches [5m], [$__rate_interval].
	rangeOrInterval = regexp.MustCompile(`\[[^\]]*\]`)
	// keywords of PromQL that look like metric names.
	keywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"}
)

// check lists what the query needs that the scrape lacks.
func (q promQuery) check(have series) []string {
	expr := q.expr
	var groups []string
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" {
				groups = append(groups, l)
			}
		}
	}
	expr = grouping.ReplaceAllString(expr, " ")
	expr = rangeOrInterval.ReplaceAllString(expr, " ")

	var problems []string
	var labelsOfQuery []string
	names := 0
	for _, loc := range selector.FindAllStringSubmatchIndex(expr, -1) {
		name := expr[loc[2]:loc[3]]
		rest := strings.TrimLeft(expr[loc[1]:], " ")
		// A function or aggregation is followed by "("; numbers and
		// keywords are no metrics.
		if loc[4] < 0 && strings.HasPrefix(rest, "(") || slices.Contains(keywords, strings.ToLower(name)) {
			continue
		}
		if loc[2] > 0 && strings.ContainsAny(expr[loc[2]-1:loc[2]], "0123456789.") {
			continue
		}
		names++
		labels, ok := have[name]
		if !ok {
			problems = append(problems, "no series "+name+" on /metrics")
			continue
		}
		labelsOfQuery = append(labelsOfQuery, labels...)
		if loc[4] >= 0 {
			for _, m := range matcher.FindAllStringSubmatch(expr[loc[4]:loc[5]], -1) {
				if !slices.Contains(labels, m[1]) {
					problems = append(problems, "series "+name+" has no label "+m[1]+" (it has "+strings.Join(sorted(labels), ", ")+")")
				}
			}
		}
	}
	if names == 0 {
		problems = append(problems, "no metric found in the expression")
	}
	for _, g := range groups {
		if !slices.Contains(labelsOfQuery, g) {
			problems = append(problems, "groups by "+g+", which none of its series has")
		}
	}
	for _, l := range legendLabel.FindAllStringSubmatch(q.legend, -1) {
		if !slices.Contains(groups, l[1]) && !slices.Contains(labelsOfQuery, l[1]) {
			problems = append(problems, "the legend names "+l[1]+", which the query does not have")
		}
	}
	return problems
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// TestDashboardQueryCheck shows that the check finds what is missing: a
// metric that does not exist, a label a series does not have, a grouping
// and a legend label that nothing provides.
func TestDashboardQueryCheck(t *testing.T) {
	have := series{
		"a_total":          {"method", "code"},
		"b_seconds_bucket": {"le"},
	}
	ok := promQuery{expr: `sum by (method) (rate(a_total{code!="OK"}[$__rate_interval])) * 60 or vector(0)`, legend: "{{method}}"}
	assert.Empty(t, ok.check(have))
	ok = promQuery{expr: `histogram_quantile(0.99, sum by (le) (rate(b_seconds_bucket[5m])))`}
	assert.Empty(t, ok.check(have))

	assert.Equal(t, []string{"no series c_total on /metrics"}, promQuery{expr: `rate(c_total[1m])`}.check(have))
	assert.Equal(t, []string{"series a_total has no label phase (it has code, method)"}, promQuery{expr: `a_total{phase="x"}`}.check(have))
	assert.Equal(t, []string{"groups by phase, which none of its series has"}, promQuery{expr: `sum by (phase) (a_total)`}.check(have))
	assert.Equal(t, []string{"the legend names phase, which the query does not have"}, promQuery{expr: `a_total`, legend: "{{phase}}"}.check(have))
	assert.Equal(t, []string{"no metric found in the expression"}, promQuery{expr: `vector(1)`}.check(have))
}
