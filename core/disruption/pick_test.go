package disruption_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/core/disruption"
)

// TestPick takes candidates in order, passes over the held ones (saying
// why), stops asking once it has n, and stops at the first error.
func TestPick(t *testing.T) {
	held := map[string]string{"b": "b asks", "d": "d asks"}
	var asked []string
	hold := func(c string) (string, error) {
		asked = append(asked, c)
		return held[c], nil
	}
	picked, why, err := disruption.Pick([]string{"a", "b", "c", "d", "e"}, hold, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c"}, picked)
	assert.Equal(t, []string{"b asks"}, why)
	assert.Equal(t, []string{"a", "b", "c"}, asked, "no candidate is asked about past the n-th taken")

	picked, why, err = disruption.Pick([]string{"a", "b"}, hold, 0)
	require.NoError(t, err)
	assert.Empty(t, picked)
	assert.Empty(t, why)

	_, _, err = disruption.Pick([]string{"a"}, func(string) (string, error) { return "", errors.New("no pods") }, 1)
	assert.Error(t, err)
}
