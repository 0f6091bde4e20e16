package machine

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
)

// This file reads the error tables of the Driver API specification
// (docs/driver-api.md), so that retry_test.go compares the controller's
// tables with the specification itself rather than with a copy of it. The
// parser is strict: a heading that is missing, a table whose header
// changed, or a row it cannot read fails the test, so that an edit of the
// specification cannot slip past it.

const driverAPIDoc = "../../../../docs/driver-api.md"

// specTable is one markdown table: its header cells and its rows' cells.
type specTable struct {
	section string
	header  []string
	rows    [][]string
}

// readSpecTable returns the first table after the heading that starts with
// heading ("#### 6.1.4 Errors"), and checks its header.
func readSpecTable(doc, heading string, header ...string) (specTable, error) {
	lines := strings.Split(doc, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "#") && strings.TrimLeft(l, "# ") == heading {
			start = i
			break
		}
	}
	if start < 0 {
		return specTable{}, fmt.Errorf("%s: no heading %q", driverAPIDoc, heading)
	}
	t := specTable{section: heading}
	for _, l := range lines[start+1:] {
		if strings.HasPrefix(l, "#") {
			break // the next section, before or after the table
		}
		if !strings.HasPrefix(l, "|") {
			if t.header != nil {
				break // the end of the table
			}
			continue
		}
		cells := splitRow(l)
		switch {
		case t.header == nil:
			t.header = cells
			if strings.Join(cells, "|") != strings.Join(header, "|") {
				return t, fmt.Errorf("%s: table header %q, want %q", heading, cells, header)
			}
		case strings.Trim(strings.Join(cells, ""), "-: ") == "":
			// The separator row.
		default:
			if len(cells) != len(header) {
				return t, fmt.Errorf("%s: row %q has %d cells, want %d", heading, l, len(cells), len(header))
			}
			t.rows = append(t.rows, cells)
		}
	}
	if len(t.rows) == 0 {
		return t, fmt.Errorf("%s: no table rows", heading)
	}
	return t, nil
}

// splitRow splits "| a | b |" into its trimmed cells. No cell of these
// tables holds a "|" of its own.
func splitRow(l string) []string {
	cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(c)
	}
	return cells
}

var (
	// ruleID is a sentence id of the specification, "[R-6.1.4-...]".
	ruleID = regexp.MustCompile(`\s*\[R-[^\]]+\]`)
	// codeName is a gRPC code as the specification writes it.
	codeName = regexp.MustCompile("^\\**`([A-Z_]+)`\\**$")
)

// parseCodes reads a Code cell: one code, or several joined by " / ",
// optionally followed by a remark in parentheses ("`OK` (the driver MUST
// answer OK; ...)").
func parseCodes(cell string) ([]codes.Code, error) {
	cell = ruleID.ReplaceAllString(cell, "")
	if i := strings.Index(cell, " ("); i >= 0 {
		cell = cell[:i]
	}
	var out []codes.Code
	for part := range strings.SplitSeq(cell, " / ") {
		m := codeName.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return nil, fmt.Errorf("code cell %q: %q is no `CODE`", cell, part)
		}
		var c codes.Code
		if err := c.UnmarshalJSON([]byte(strconv.Quote(m[1]))); err != nil {
			return nil, fmt.Errorf("code cell %q: %w", cell, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// retryWords finds the retry periods a reaction names: "short retry",
// "the **medium** period", "long retry (10m)", "--resource-exhausted-retry".
var retryWords = regexp.MustCompile("(?i)\\b(short|medium|long)\\**\\s+(?:retry|period)|`--resource-exhausted-retry`")

// parseReaction reads what the core does from a reaction cell: a failure
// with exactly one retry period (and "broken driver" where said), or one
// of the phrasings of an answer that lets the flow go on.
func parseReaction(cell string) (reaction, error) {
	text := strings.TrimSpace(cell)
	lower := strings.ToLower(text)
	var r reaction
	for _, m := range retryWords.FindAllStringSubmatch(text, -1) {
		var c retryClass
		switch strings.ToLower(m[1]) {
		case "short":
			c = retryShort
		case "medium":
			c = retryMedium
		case "long":
			c = retryLong
		default:
			c = retryResourceExhausted
		}
		if r.retry != 0 && r.retry != c {
			return r, fmt.Errorf("reaction %q names two retry periods, %s and %s", text, r.retry, c)
		}
		r.retry = c
	}
	r.brokenDriver = strings.Contains(lower, "broken driver")
	goesOn := strings.HasPrefix(lower, "success") || strings.HasPrefix(lower, "goes on to") ||
		strings.HasPrefix(lower, "treated exactly like `ok`") || strings.Contains(lower, "calls `createmachine`")
	warns := strings.HasPrefix(lower, "goes on without")
	switch {
	case goesOn || warns:
		if r.retry != 0 || r.brokenDriver {
			return r, fmt.Errorf("reaction %q both goes on and retries", text)
		}
		return reaction{proceed: true, warn: warns}, nil
	case r.retry == 0:
		return r, fmt.Errorf("reaction %q names no retry period and no way on", text)
	}
	return r, nil
}

// rpcRows reads the per-RPC error table under heading: for each code, the
// reaction in each of the columns named (e.g. "What the core does", or
// "Creation" and "Deletion").
func rpcRows(doc, heading string, header []string, columns ...string) (map[string]map[codes.Code]reaction, error) {
	t, err := readSpecTable(doc, heading, header...)
	if err != nil {
		return nil, err
	}
	codeCol := indexOf(header, "Code")
	out := map[string]map[codes.Code]reaction{}
	for _, row := range t.rows {
		cs, err := parseCodes(row[codeCol])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", heading, err)
		}
		for _, col := range columns {
			r, err := parseReaction(row[indexOf(header, col)])
			if err != nil {
				return nil, fmt.Errorf("%s, column %s: %w", heading, col, err)
			}
			if out[col] == nil {
				out[col] = map[codes.Code]reaction{}
			}
			for _, c := range cs {
				if prev, ok := out[col][c]; ok && prev != r {
					return nil, fmt.Errorf("%s: two rows for %s say different things", heading, c)
				}
				out[col][c] = r
			}
		}
	}
	return out, nil
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	panic("no column " + v)
}

// generalRow is one row of the general error table, §7.2.
type generalRow struct {
	codes     []codes.Code
	otherCode bool // the row of "any other code"
	numbers   []int
	errorCode string
	reaction  string
}

// generalTable reads §7.2.
func generalTable(doc string) ([]generalRow, error) {
	header := []string{"Code", "No.", "errorCode", "Use it when", "General reaction of the core"}
	t, err := readSpecTable(doc, "7.2 General error table", header...)
	if err != nil {
		return nil, err
	}
	var out []generalRow
	for _, row := range t.rows {
		g := generalRow{errorCode: strings.Trim(row[2], "`"), reaction: row[4]}
		cell := ruleID.ReplaceAllString(row[0], "")
		if rest, ok := strings.CutSuffix(cell, ", any other code"); ok {
			cell, g.otherCode = rest, true
		}
		for part := range strings.SplitSeq(cell, ", ") {
			cs, err := parseCodes(part)
			if err != nil {
				return nil, fmt.Errorf("7.2: %w", err)
			}
			g.codes = append(g.codes, cs...)
		}
		for n := range strings.SplitSeq(row[1], ", ") {
			if n == "…" && g.otherCode {
				continue
			}
			i, err := strconv.Atoi(n)
			if err != nil {
				return nil, fmt.Errorf("7.2: number %q of %s: %w", n, row[0], err)
			}
			g.numbers = append(g.numbers, i)
		}
		out = append(out, g)
	}
	return out, nil
}

// generalReaction is §7.2's reaction to code in a flow (creation or
// deletion) of an RPC that does not list the code itself. A row may name
// RPCs first ("GetMachineStatus: ... Elsewhere: ..."); those RPCs list the
// code in their own tables, so the clause after "Elsewhere:" or
// "Otherwise:" applies. "As `INTERNAL`." refers to that row; "X in
// creation, Y in deletion" splits by flow.
func generalReaction(rows []generalRow, code codes.Code, creation bool) (reaction, error) {
	var row *generalRow
	for i := range rows {
		for _, c := range rows[i].codes {
			if c == code {
				row = &rows[i]
			}
		}
	}
	if row == nil {
		for i := range rows {
			if rows[i].otherCode {
				row = &rows[i]
			}
		}
	}
	if row == nil {
		return reaction{}, fmt.Errorf("7.2: no row for %s", code)
	}
	text := row.reaction
	if text == "As `INTERNAL`." {
		return generalReaction(rows, codes.Internal, creation)
	}
	for _, word := range []string{"Elsewhere: ", "Otherwise: "} {
		if _, rest, ok := strings.Cut(text, word); ok {
			text = rest
		}
	}
	if strings.Contains(text, " in creation, ") {
		before, after, _ := strings.Cut(text, " in creation, ")
		if !strings.Contains(after, " in deletion") {
			return reaction{}, fmt.Errorf("7.2: reaction %q has a creation and no deletion part", row.reaction)
		}
		text = before
		if !creation {
			text, _, _ = strings.Cut(after, " in deletion")
		}
	}
	r, err := parseReaction(text)
	if err != nil {
		return r, fmt.Errorf("7.2, %s: %w", code, err)
	}
	return r, nil
}

// readDriverAPIDoc returns the specification's text.
func readDriverAPIDoc() (string, error) {
	data, err := os.ReadFile(driverAPIDoc)
	return string(data), err
}
