package conformance_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/machina-io/machina/conformance/internal/trace"
)

var updateCaught = flag.Bool("update-caught", false, "rewrite "+trace.CaughtPath+" from the mutants")

// TestTraceability keeps every normative sentence of docs/driver-api.md
// traced: each has an id, each id is exercised by a check or has a reason
// in conformance/internal/trace/reasons.go, every id a rule cites exists,
// and docs/conformance-matrix.md and zz_generated.spec.go are current.
func TestTraceability(t *testing.T) {
	// The matrix, generated outside the tests, reads the mutants' pairs
	// from trace.CaughtPath: it must be theirs.
	// Each mutant breaks one clause of its sentence (clauses.go); the
	// pairs are per clause, so that a clause no mutant breaks shows.
	pairs := map[string][]string{}
	for _, mu := range allMutants() {
		clause, err := trace.ClauseOf(mu.id, mu.clause)
		if err != nil {
			t.Errorf("mutant %q: %v", mu.name, err)
			continue
		}
		ref := trace.JoinClause(mu.id, clause)
		pairs[ref] = append(pairs[ref], mu.test)
	}
	caught := trace.RenderCaught(pairs)
	caughtPath := filepath.Join("..", trace.CaughtPath)
	if *updateCaught {
		require.NoError(t, os.WriteFile(caughtPath, caught, 0o644))
	}
	got, err := os.ReadFile(caughtPath)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(caught, got), "%s is not the mutants': run `go test ./conformance -run TestTraceability -update-caught`, then `go generate ./conformance`", trace.CaughtPath)

	m, err := trace.Load("..")
	require.NoError(t, err)
	assert.Empty(t, m.Problems(), "run `go generate ./...` in conformance/ after fixing; `go run ./internal/tracegen -add-ids` proposes ids for new sentences")
	total, checked, unchecked := m.Counts()
	t.Logf("%d sentences: %d exercised by checks, %d without a check (reason given)", total, checked, unchecked)
	doc, err := os.ReadFile("../docs/conformance.md")
	require.NoError(t, err)
	for _, line := range []string{
		fmt.Sprintf("**Sentences with an id:** %d", total),
		fmt.Sprintf("**Exercised by at least one check:** %d", checked),
		fmt.Sprintf("**Without a check (reason given in the matrix):** %d", unchecked),
	} {
		assert.Contains(t, string(doc), line, "docs/conformance.md §9 states the counts")
	}
	sentences, clauses, inProcess, process, unbroken := m.ClauseCounts()
	assert.Contains(t, strings.Join(strings.Fields(string(doc)), " "), fmt.Sprintf(
		"**Clauses:** %d in the %d checked sentences that a driver can break: %d broken by a caught in-process mutant, %d by a process mutant, %d with the reason no mutant can break them alone",
		clauses, sentences, inProcess, process, unbroken), "docs/conformance.md §9 states the clause counts")

	// A check the matrix cites for a sentence is backed by a mutant of that
	// sentence which names that check as the one that catches it
	// (TestSuiteCatchesBrokenDrivers proves it does), and no mutant claims
	// a check the matrix does not cite for its sentence.
	backed := map[string]map[string]bool{}
	for _, mu := range allMutants() {
		if backed[mu.id] == nil {
			backed[mu.id] = map[string]bool{}
		}
		backed[mu.id][mu.test] = true
		if !slices.Contains(m.Checks.ByID[mu.id], mu.test) {
			t.Errorf("mutant %q claims that %s catches %s, but the matrix does not cite that check for it (checks: %v)", mu.name, mu.test, mu.id, m.Checks.ByID[mu.id])
		}
	}
	for _, id := range m.Checkable() {
		if trace.NoMutant[id] != "" {
			continue
		}
		ok := false
		for _, c := range m.Checks.ByID[id] {
			ok = ok || backed[id][c]
		}
		if !ok {
			t.Errorf("%s cites the checks %v, and no mutant of the sentence is caught by any of them: add one to the mutants (broken_test.go, mutants_clause*_test.go)", id, m.Checks.ByID[id])
		}
	}

	files, err := trace.Generate("..")
	require.NoError(t, err)
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join("..", path))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want, got), "%s is stale: run `go generate ./...` in conformance/", path)
	}
}

// TestTraceabilityCatchesGaps feeds the parser a spec with the defects the
// traceability test exists for.
func TestTraceabilityCatchesGaps(t *testing.T) {
	spec := trace.Parse(strings.Join([]string{
		`<a id="s6-1-3"></a>`,
		"A driver MUST do one thing. [R-6.1.3-one-thing] It SHOULD do another, e.g. this.",
		"",
		"| Condition | Code | What the core does |",
		"|---|---|---|",
		"| Tagged [R-6.1.3-tagged-row] | `NOT_FOUND` | x |",
		"| Untagged | `INTERNAL` | y |",
		"",
		"- `MUST` in code is a name. A MUST in a list item. [R-6.1.3-one-thing]",
	}, "\n"))
	var ids []string
	for _, s := range spec.Sentences {
		ids = append(ids, s.ID)
	}
	assert.Equal(t, []string{"R-6.1.3-one-thing", "R-6.1.3-tagged-row", "R-6.1.3-one-thing"}, ids)
	assert.Equal(t, "A driver MUST do one thing.", spec.Sentences[0].Text)
	assert.Equal(t, "Tagged → `NOT_FOUND`", spec.Sentences[1].Text)
	assert.Equal(t, []string{"R-6.1.3-one-thing"}, spec.Duplicates)
	require.Len(t, spec.Untagged, 2)
	assert.Equal(t, "It SHOULD do another, e.g. this.", spec.Untagged[0].Text)
	assert.True(t, spec.Untagged[1].Row)
	assert.Equal(t, "Untagged → `INTERNAL`", spec.Untagged[1].Text)

	// The matrix cites only the checks a mutant proves, and counts the rest.
	cited := &trace.Matrix{Spec: spec, Checks: &trace.Checks{ByID: map[string][]string{
		"R-6.1.3-one-thing":  {"A/proven", "B/shared", "C/shared"},
		"R-6.1.3-tagged-row": {"D/shared"},
	}}, Caught: map[string][]string{"R-6.1.3-one-thing": {"A/proven"}}}
	md := string(cited.RenderMarkdown())
	assert.Contains(t, md, "| `A/proven` (evaluated in 2 more checks, not proven by a mutant) |")
	assert.Contains(t, md, "| no check yet proven by a mutant (evaluated in 1 more check, not proven by a mutant) |")
	assert.NotContains(t, md, "`B/shared`", "a check without a mutant is not cited")

	m := &trace.Matrix{Spec: spec, Checks: &trace.Checks{ByID: map[string][]string{"R-9-nowhere": {"X/y"}}}}
	problems := strings.Join(m.Problems(), "\n")
	assert.Contains(t, problems, "R-9-nowhere (checks X/y), which docs/driver-api.md does not have")
	assert.Contains(t, problems, "R-6.1.3-tagged-row (docs/driver-api.md:6) has no check and no reason")
	assert.Contains(t, problems, "without an id: It SHOULD do another")
}

// TestTraceabilityFindsChecks reads a small suite: the test's rule is
// found through the helper it calls, a rule no test uses and a failure that
// bypasses the rules are reported.
func TestTraceabilityFindsChecks(t *testing.T) {
	dir := t.TempDir()
	src := `package conformance

type rule struct{ id, text string }

func (r rule) errorf(t T, f string, a ...any) { t.Errorf(f, a...) }

var (
	ruleUsed   = rule{"R-6.1.3-used", "used"}
	ruleUnused = rule{"R-6.1.3-unused", "unused"}
)

func suiteTests() []testCase {
	return []testCase{tc("Group/check", "§6.1.3", capNone, "checks", testCheck)}
}

func testCheck(s *suite, t T) { helper(t); t.Fatalf("no rule") }

func helper(t T) { ruleUsed.errorf(t, "x") }
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "suite.go"), []byte(src), 0o600))
	c, err := trace.ReadChecks(dir)
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"R-6.1.3-used": {"Group/check"}}, c.ByID)
	problems := strings.Join(c.Problems, "\n")
	assert.Contains(t, problems, "rule ruleUnused (R-6.1.3-unused) is used by no test")
	assert.Contains(t, problems, "suite.go:16: testCheck fails with t.Fatalf, not through a rule")
}

// TestClausesCatchGaps feeds the clause rules a sentence whose clause list
// misquotes it, leaves a MUST out and has a clause no mutant breaks, and a
// checked sentence without clauses.
func TestClausesCatchGaps(t *testing.T) {
	src := strings.Join([]string{
		`<a id="s6-1-3"></a>`,
		"A driver MUST do one thing and MUST NOT do another. [R-6.1.3-one-thing]",
		"A driver MUST do a second thing. [R-6.1.3-second-thing]",
	}, "\n")
	saved := trace.Clauses
	t.Cleanup(func() { trace.Clauses = saved })
	trace.Clauses = map[string][]trace.Clause{"R-6.1.3-one-thing": {
		{Name: "first", Quote: "MUST do one thing"},
		{Name: "second", Quote: "MUST NOT do nothing"},
	}}
	m := &trace.Matrix{Spec: trace.Parse(src), Lines: strings.Split(src, "\n"),
		Checks:        &trace.Checks{ByID: map[string][]string{"R-6.1.3-one-thing": {"A/x"}, "R-6.1.3-second-thing": {"B/y"}}},
		CaughtClauses: map[string][]string{"R-6.1.3-one-thing#first": {"A/x"}}}
	problems := strings.Join(m.Problems(), "\n")
	assert.Contains(t, problems, `R-6.1.3-one-thing#second quotes "MUST NOT do nothing", which is not in the sentence`)
	assert.Contains(t, problems, `R-6.1.3-one-thing: "MUST" at byte 31 of the sentence is in no clause's quote`)
	assert.Contains(t, problems, `R-6.1.3-one-thing#second ("MUST NOT do nothing") has no mutant that a check cited for the sentence catches`)
	assert.Contains(t, problems, "R-6.1.3-second-thing is checked and has no clauses")
	assert.NotContains(t, problems, "R-6.1.3-one-thing#first (")

	_, err := trace.ClauseOf("R-6.1.3-one-thing", "")
	assert.ErrorContains(t, err, "has 2 clauses (first, second): name the one the mutant breaks")
	_, err = trace.ClauseOf("R-6.1.3-one-thing", "third")
	assert.ErrorContains(t, err, `has no clause "third"`)
}
