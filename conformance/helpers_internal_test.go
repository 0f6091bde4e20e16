package conformance

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func mustRegexp(t *testing.T, s string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(s)
	require.NoError(t, err)
	return re
}
