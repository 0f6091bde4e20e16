package machinedeployment

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// updatePlans rewrites the expected plans of testdata/plans with what the
// planners compute now:
//
//	go test ./core/internal/controller/machinedeployment/ -run TestRolloutPlans -update
//
// Every change it makes must be reviewed by hand, step by step, against the
// strategy's rules (docs/machinedeployments.md) before it is committed: a
// golden plan is only worth something if a person checked it is right, not
// just that it is what the code does.
var updatePlans = flag.Bool("update", false, "rewrite the golden rollout plans in testdata/plans (review every change by hand)")

// planCase is one golden file: the planner (strategy: RollingUpdate,
// Recreate, or Scale for a scaling event), a snapshot, what reading the disruption
// budgets gives (absent: no budget limits the rollout), and the plan the
// strategy's planner must compute from them.
type planCase struct {
	Description string          `json:"description"`
	Strategy    string          `json:"strategy"`
	Budget      *budgetRoom     `json:"budget,omitempty"`
	Snapshot    rolloutSnapshot `json:"snapshot"`
	Plan        rolloutPlan     `json:"plan"`
}

var planners = map[string]func(rolloutSnapshot) rolloutPlan{
	"RollingUpdate": planRolling,
	"Recreate":      planRecreate,
	"Scale":         planScale, // a scaling event or a paused deployment
}

// TestRolloutPlans computes the plan of each case in testdata/plans and
// compares it with the expected one, the way the controller plans
// (planWithBudget): the budget is read only if the plan needs it.
func TestRolloutPlans(t *testing.T) {
	runGolden(t, filepath.Join("testdata", "plans", "*.json"), 12, func(c *planCase) *rolloutPlan { return &c.Plan },
		func(t *testing.T, c planCase) rolloutPlan {
			planner, ok := planners[c.Strategy]
			require.True(t, ok, "strategy %q", c.Strategy)
			reads := 0
			got := planWithBudget(c.Snapshot, planner, func() budgetRoom {
				reads++
				if c.Budget == nil {
					return budgetRoom{}
				}
				return *c.Budget
			})
			assert.Equal(t, got.BudgetRead, reads == 1, "the plan says it read the budget exactly when it was read")
			assert.LessOrEqual(t, reads, 1, "the budget is read at most once")
			assert.False(t, got.needsBudget, "a plan with the budget read needs nothing more")
			return got
		})
}

// waveCase is one golden wave of an in-place rollout: a snapshot, what
// reading the disruption budgets of reason InPlace gives (absent: no
// budget limits it), and the wave planWave must plan.
type waveCase struct {
	Description string       `json:"description"`
	Budget      *budgetRoom  `json:"budget,omitempty"`
	Snapshot    waveSnapshot `json:"snapshot"`
	Plan        wavePlan     `json:"plan"`
}

// TestWavePlans plans each wave of testdata/plans/wave the way
// selectForUpdate does (planWaveWithBudget) and compares it with the
// expected one; -update rewrites them, to be reviewed by hand as above.
func TestWavePlans(t *testing.T) {
	runGolden(t, filepath.Join("testdata", "plans", "wave", "*.json"), 1, func(c *waveCase) *wavePlan { return &c.Plan },
		func(t *testing.T, c waveCase) wavePlan {
			reads := 0
			got := planWaveWithBudget(c.Snapshot, func(underway int32) budgetRoom {
				reads++
				assert.Equal(t, selectedIn(c.Snapshot), underway, "the budget is asked with the nodes under way")
				if c.Budget == nil {
					return budgetRoom{}
				}
				return *c.Budget
			})
			assert.Equal(t, got.BudgetRead, reads == 1, "the plan says it read the budget exactly when it was read")
			assert.False(t, got.needsBudget)
			// The indexes behind Selectable name the same nodes.
			require.Len(t, got.selectable, len(got.Selectable))
			for k, i := range got.selectable {
				assert.Equal(t, c.Snapshot.Candidates[i].Node, got.Selectable[k])
			}
			got.selectable = nil
			return got
		})
}

// selectedIn counts the selected nodes of a snapshot: the disruptions
// under way the budget is asked about.
func selectedIn(snap waveSnapshot) int32 {
	var n int32
	for _, c := range snap.Candidates {
		if c.Node != "" && c.Selected {
			n++
		}
	}
	return n
}

// runGolden runs each golden case of the files matching pattern (at least
// atLeast of them, so that a moved directory cannot pass): it decodes the
// case, computes its plan, and compares it with the case's expected plan
// (plan points at it), or with -update writes the computed one in its place.
// Every case must describe itself.
func runGolden[C, P any](t *testing.T, pattern string, atLeast int, plan func(*C) *P, compute func(*testing.T, C) P) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), atLeast, "golden cases matching %s", pattern)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			var c C
			require.NoError(t, json.Unmarshal(raw, &c))
			var described struct {
				Description string `json:"description"`
			}
			require.NoError(t, json.Unmarshal(raw, &described))
			require.NotEmpty(t, described.Description, "a golden case says what it shows")
			got := compute(t, c)
			if *updatePlans {
				*plan(&c) = got
				writeGolden(t, file, c)
				return
			}
			assert.Equal(t, *plan(&c), got)
		})
	}
}

// writeGolden rewrites a golden file (-update).
func writeGolden(t *testing.T, file string, v any) {
	t.Helper()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // "2->1" stays readable
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(v))
	require.NoError(t, os.WriteFile(file, out.Bytes(), 0o600))
}
