package trace

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// Clause is one part of a checked sentence that a driver can break on its
// own: an obligation (each MUST or MUST NOT of the sentence) or a case the
// sentence names that the suite sends separately (a limit, a trigger, a
// moment of the run). The sentence-level proof ("some mutant of this
// sentence is caught") lets a check that exercises one clause vouch for a
// sentence whose other clauses it never breaks; per clause, it cannot.
type Clause struct {
	// Name is short and unique within the sentence; a mutant names it
	// after the id: "R-6.3.3-idempotent#repeat".
	Name string
	// Quote is the words of the sentence the clause is, verbatim from the
	// spec's line. Together the quotes cover every normative keyword of
	// the sentence.
	Quote string
	// Process is set when the clause's mutant is a driver process
	// (drivers/inmemory/testdata/brokendriver), caught in launcher mode by
	// cmd/machina-conformance's TestLauncherMode, not a switch of the
	// in-process reference driver.
	Process bool
	// Unbroken, when set, is why no mutant breaks this clause on its own
	// (the suite cannot send the case, or another sentence's check
	// reports it); the matrix prints it.
	Unbroken string
}

// clauseSep separates a sentence id from a clause name in a mutant's id
// and in CaughtPath.
const clauseSep = "#"

// SplitClause splits "R-x#clause" into the sentence id and the clause name
// ("" when there is none).
func SplitClause(ref string) (id, clause string) {
	id, clause, _ = strings.Cut(ref, clauseSep)
	return id, clause
}

// JoinClause is the reverse of SplitClause.
func JoinClause(id, clause string) string { return id + clauseSep + clause }

// ClauseOf resolves the clause a mutant of id names: its own, or the only
// clause of a sentence that has one. It fails on an unknown clause and on
// a missing one where the sentence has several.
func ClauseOf(id, clause string) (string, error) {
	cs := Clauses[id]
	if clause == "" {
		if len(cs) == 1 {
			return cs[0].Name, nil
		}
		return "", fmt.Errorf("%s has %d clauses (%s): name the one the mutant breaks, as %s", id, len(cs), clauseNames(cs), JoinClause(id, "<clause>"))
	}
	for _, c := range cs {
		if c.Name == clause {
			if c.Process {
				return "", fmt.Errorf("%s is proven by a process mutant (TestLauncherMode), not by an in-process one", JoinClause(id, clause))
			}
			return clause, nil
		}
	}
	return "", fmt.Errorf("%s has no clause %q (clauses: %s)", id, clause, clauseNames(cs))
}

func clauseNames(cs []Clause) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// clauseProblems checks the clause table against the spec and the caught
// mutants: every sentence a check exercises, except those no driver can
// break, has clauses; each quote is the sentence's own words; the quotes
// cover its normative keywords; and each clause is broken by a mutant that
// a check cited for the sentence catches (or, for a process clause, is
// left to TestLauncherMode).
func (m *Matrix) clauseProblems(lines []string) []string {
	var out []string
	bySentence := m.Spec.ByID()
	for id := range Clauses {
		if _, ok := bySentence[id]; !ok {
			out = append(out, fmt.Sprintf("clauses.go lists clauses of %s, which docs/driver-api.md does not have", id))
		}
	}
	for _, id := range m.Checkable() {
		s := bySentence[id]
		cs := Clauses[id]
		if NoMutant[id] != "" && NoMutant[id] != launcherOnly {
			if len(cs) > 0 {
				out = append(out, fmt.Sprintf("%s has clauses but no driver can break it (nomutant.go)", id))
			}
			continue
		}
		if len(cs) == 0 {
			out = append(out, fmt.Sprintf("%s is checked and has no clauses in conformance/internal/trace/clauses.go: list each obligation and case of %q", id, s.Text))
			continue
		}
		line := ""
		if s.Line-1 < len(lines) {
			line = lines[s.Line-1]
		}
		seen := map[string]bool{}
		for _, c := range cs {
			switch {
			case c.Name == "" || strings.ContainsAny(c.Name, " #\t"):
				out = append(out, fmt.Sprintf("%s: clause name %q is empty or has a space, # or tab", id, c.Name))
			case seen[c.Name]:
				out = append(out, fmt.Sprintf("%s: clause %q is listed twice", id, c.Name))
			}
			seen[c.Name] = true
			if !strings.Contains(s.Text, c.Quote) && !strings.Contains(line, c.Quote) {
				out = append(out, fmt.Sprintf("%s#%s quotes %q, which is not in the sentence (docs/driver-api.md:%d)", id, c.Name, c.Quote, s.Line))
			}
			if launcher := NoMutant[id] == launcherOnly; launcher && !c.Process {
				out = append(out, fmt.Sprintf("%s#%s: the sentence is checked only by launching the driver, so its clauses are proven by process mutants (set Process)", id, c.Name))
			}
			if !c.Process && c.Unbroken == "" && len(m.caughtClause(id, c.Name)) == 0 {
				out = append(out, fmt.Sprintf("%s#%s (%q) has no mutant that a check cited for the sentence catches: add one to the mutants (conformance/mutants*_test.go) and run `go test ./conformance -run TestTraceability -update-caught`", id, c.Name, c.Quote))
			}
		}
		for _, kw := range uncoveredKeywords(s.Text, cs) {
			out = append(out, fmt.Sprintf("%s: %q at byte %d of the sentence is in no clause's quote", id, kw.word, kw.at))
		}
	}
	for ref := range m.CaughtClauses {
		id, clause := SplitClause(ref)
		found := false
		for _, c := range Clauses[id] {
			found = found || c.Name == clause
		}
		if !found {
			out = append(out, fmt.Sprintf("%s lists %s, which clauses.go does not have", CaughtPath, ref))
		}
	}
	sort.Strings(out)
	return out
}

// caughtClause lists the checks cited for id that catch a mutant of its
// clause.
func (m *Matrix) caughtClause(id, clause string) []string {
	var out []string
	for _, c := range m.CaughtClauses[JoinClause(id, clause)] {
		if contains(m.Checks.ByID[id], c) {
			out = append(out, c)
		}
	}
	return out
}

type keyword struct {
	word string
	at   int
}

// uncoveredKeywords lists the normative keywords of text (outside code
// spans, which name things) that lie in no occurrence of a clause's quote.
func uncoveredKeywords(text string, cs []Clause) []keyword {
	blank := codeRE.ReplaceAllStringFunc(text, func(s string) string { return strings.Repeat(" ", len(s)) })
	covered := make([]bool, len(text))
	for _, c := range cs {
		if c.Quote == "" {
			continue
		}
		for from := 0; ; {
			i := strings.Index(text[from:], c.Quote)
			if i < 0 {
				break
			}
			for j := from + i; j < from+i+len(c.Quote); j++ {
				covered[j] = true
			}
			from += i + 1
		}
	}
	var out []keyword
	for _, loc := range keywordRE.FindAllStringIndex(blank, -1) {
		if !covered[loc[0]] {
			out = append(out, keyword{text[loc[0]:loc[1]], loc[0]})
		}
	}
	return out
}

// ProcessClauseMark is how the matrix's clause table marks a clause whose
// mutant is a driver process; cmd/machina-conformance's
// TestProcessMutantsCoverLauncherSentences reads it.
const ProcessClauseMark = "a process mutant, in launcher mode"

// renderClauses writes the matrix's clause table: for each checked
// sentence, its clauses and the checks that catch a mutant of each.
func (m *Matrix) renderClauses(b *bytes.Buffer) {
	total, sentences := 0, 0
	for _, id := range m.Checkable() {
		if n := len(Clauses[id]); n > 0 {
			total += n
			sentences++
		}
	}
	fmt.Fprintf(b, `
## Clauses

A sentence can oblige several things, or name several cases, that a driver can get wrong one at a
time. Each checked sentence is cut into its clauses (`+"`conformance/internal/trace/clauses.go`"+`:
each obligation, and each case the suite sends separately), and each clause is broken by a mutant
that a check cited above catches; `+"`TestTraceability`"+` fails on a clause without one. A clause
marked "%s" is proven by `+"`TestLauncherMode`"+` in `+"`cmd/machina-conformance`"+`.

- Clauses of the %d sentences with one or more: **%d**

| Id#clause | Words of the sentence | Broken by a mutant caught by |
|---|---|---|
`, ProcessClauseMark, sentences, total)
	for _, id := range m.Checkable() {
		for _, c := range Clauses[id] {
			by := quote(m.caughtClause(id, c.Name))
			switch {
			case c.Process:
				by = ProcessClauseMark
			case c.Unbroken != "":
				by = "no mutant: " + c.Unbroken
			}
			fmt.Fprintf(b, "| `%s` | %s | %s |\n", JoinClause(id, c.Name), cell(c.Quote), cell(by))
		}
	}
}

// ClauseCounts counts the clauses of the checked sentences: all, those an
// in-process mutant breaks, those a process mutant breaks, and those no
// mutant can break (with the reason in the matrix).
func (m *Matrix) ClauseCounts() (sentences, total, inProcess, process, unbroken int) {
	for _, id := range m.Checkable() {
		cs := Clauses[id]
		if len(cs) > 0 {
			sentences++
		}
		for _, c := range cs {
			total++
			switch {
			case c.Process:
				process++
			case c.Unbroken != "":
				unbroken++
			default:
				inProcess++
			}
		}
	}
	return sentences, total, inProcess, process, unbroken
}
