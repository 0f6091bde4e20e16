package conformance_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance"
)

// TestDocumentedChecks keeps the table of checks in docs/conformance.md in
// step with the suite: every check is listed with its section.
func TestDocumentedChecks(t *testing.T) {
	doc, err := os.ReadFile("../docs/conformance.md")
	require.NoError(t, err)
	for _, ti := range conformance.Tests() {
		row := "| `" + ti.Name + "` | [" + ti.Section + "]"
		assert.True(t, strings.Contains(string(doc), row), "docs/conformance.md lacks the row of %s (%s)", ti.Name, ti.Section)
	}
}
