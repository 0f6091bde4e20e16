package machinedeployment

import (
	"path/filepath"
	"testing"

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
	runGolden(t, filepath.Join("testdata", "plans", "inplace", "*.json"), 10, func(c *inPlaceCase) *rolloutPlan { return &c.Plan },
		func(t *testing.T, c inPlaceCase) rolloutPlan {
			planner, ok := inPlacePlanners[c.Planner]
			require.True(t, ok, "planner %q", c.Planner)
			return planner(c.Snapshot)
		})
}
