package machinedeployment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inPlaceCase is one golden sizing of an in-place rollout: the planner
// (Sizes: the sets follow their machines; Moves: the sets follow the
// machines a sync moved), a snapshot, and the plan it must compute.
type inPlaceCase struct {
	Description string          `json:"description"`
	Planner     string          `json:"planner"`
	Snapshot    inPlaceSnapshot `json:"snapshot"`
	Plan        rolloutPlan     `json:"plan"`
}

var inPlacePlanners = map[string]func(inPlaceSnapshot) rolloutPlan{
	"Sizes": planInPlaceSizes,
	"Moves": planInPlaceMoves,
}

// TestInPlaceSizingPlans computes the plan of each case in
// testdata/plans/inplace and compares it with the expected one; -update
// rewrites them, to be reviewed by hand as TestRolloutPlans says.
func TestInPlaceSizingPlans(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "plans", "inplace", "*.json"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 10, "golden in-place sizings")
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			var c inPlaceCase
			require.NoError(t, json.Unmarshal(raw, &c))
			planner, ok := inPlacePlanners[c.Planner]
			require.True(t, ok, "planner %q", c.Planner)
			require.NotEmpty(t, c.Description)

			got := planner(c.Snapshot)
			if *updatePlans {
				c.Plan = got
				writeGolden(t, file, c)
				return
			}
			assert.Equal(t, c.Plan, got)
		})
	}
}
