// Package trace ties the normative sentences of the Driver API spec
// (docs/driver-api.md) to the conformance checks that exercise them. It
// parses the spec's sentence ids, finds the ids the suite's rules cite, and
// renders docs/conformance-matrix.md and the suite's table of sentences.
package trace

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// An id marks a normative sentence in the spec: `[R-<section>-<slug>]`
// right after the sentence, or in the first cell of an error-table row. The
// section is the one the sentence was first written in; an id never changes
// and is never reused, also when its sentence moves.
var (
	idRE      = regexp.MustCompile(`\[(R-[0-9A-Z]+(?:\.[0-9]+)*-[a-z0-9]+(?:-[a-z0-9]+)*)\]`)
	keywordRE = regexp.MustCompile(`\b(MUST|SHOULD|REQUIRED|SHALL)\b`)
	anchorRE  = regexp.MustCompile(`^<a id="s([0-9A-Z]+(?:-[0-9]+)*)"></a>`)
	listRE    = regexp.MustCompile(`^(\s*)(?:[-*]|[0-9]+\.)\s+`)
	idFormRE  = regexp.MustCompile(`^R-[0-9A-Z]+(?:\.[0-9]+)*-[a-z0-9]+(?:-[a-z0-9]+)*$`)
)

// ValidID reports whether s has the form of a sentence id.
func ValidID(s string) bool { return idFormRE.MatchString(s) }

// Sentence is one normative sentence of the spec, or one row of an error
// table.
type Sentence struct {
	ID      string
	Section string // where it is now, e.g. "6.1.3"
	Text    string // the sentence, markdown as written, without its id
	Line    int    // 1-based line of the id in the spec
}

// Untagged is a normative sentence (or error-table row) without an id.
type Untagged struct {
	Section string
	Text    string
	Line    int
	// Row is true for an error-table row: its id goes into its first cell.
	Row bool
	// At is where its id goes: a 0-based line and a byte column.
	AtLine, AtCol int
	// Own is the sentence without the table-row prefix of Text.
	Own string
}

// Spec is what Parse finds in the spec.
type Spec struct {
	Sentences []Sentence // in the order of the document
	Untagged  []Untagged
	// Duplicates lists ids that tag more than one sentence.
	Duplicates []string
	// Misplaced lists ids written where they tag no sentence (e.g. in a
	// heading or a code block).
	Misplaced []string
}

// ByID returns the sentences by id.
func (s *Spec) ByID() map[string]Sentence {
	m := make(map[string]Sentence, len(s.Sentences))
	for _, x := range s.Sentences {
		m[x.ID] = x
	}
	return m
}

// skippedSections hold no obligations of their own: §1.3 defines the
// keywords, §3.6 summarises answers worded in the sections concerned, §13
// maps MCM's terms onto rules stated elsewhere.
var skippedSections = map[string]bool{"1.3": true, "3.6": true, "13": true, "13.1": true, "13.2": true, "13.3": true, "13.4": true}

// block is a paragraph, a list item or a table cell, joined into one line.
type block struct {
	text    string
	line    int
	section string
	// prefix is prepended to a sentence of the block in the matrix (the
	// first cell of a table row, for a sentence in a later cell).
	prefix string
	segs   []seg
}

// seg is where a piece of a block's text is in the spec: the piece starts
// at off in the block's text and at line (0-based) and col in the file.
type seg struct{ off, line, col int }

// pos returns the line (0-based) and column of offset off of b.text.
func (b block) pos(off int) (int, int) {
	s := b.segs[0]
	for _, x := range b.segs {
		if x.off <= off {
			s = x
		}
	}
	return s.line, s.col + off - s.off
}

// add appends a piece of text at line and col.
func (b *block) add(piece string, line, col int) {
	if b.text != "" {
		b.text += " "
	}
	b.segs = append(b.segs, seg{off: len(b.text), line: line, col: col})
	b.text += piece
}

// Parse reads the spec.
func Parse(src string) *Spec {
	p := &specParser{spec: &Spec{}, seen: map[string]int{}}
	p.run(strings.Split(src, "\n"))
	for id, n := range p.seen {
		if n > 1 {
			p.spec.Duplicates = append(p.spec.Duplicates, id)
		}
	}
	sort.Strings(p.spec.Duplicates)
	return p.spec
}

type specParser struct {
	spec    *Spec
	seen    map[string]int
	section string
}

func (p *specParser) run(lines []string) {
	inCode := false
	var para *block
	flush := func() {
		if para != nil {
			p.block(*para)
			para = nil
		}
	}
	for i := 0; i < len(lines); i++ {
		raw := lines[i]
		trimmed := strings.TrimSpace(raw)
		if strings.HasPrefix(trimmed, "```") {
			flush()
			inCode = !inCode
			continue
		}
		if inCode {
			p.misplaced(raw)
			continue
		}
		if m := anchorRE.FindStringSubmatch(trimmed); m != nil {
			flush()
			p.section = strings.ReplaceAll(m[1], "-", ".")
			continue
		}
		switch {
		case trimmed == "" || trimmed == "---":
			flush()
		case strings.HasPrefix(trimmed, "#"):
			flush()
			p.misplaced(raw)
		case strings.HasPrefix(trimmed, "|"):
			flush()
			j := i
			for j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), "|") {
				j++
			}
			p.table(lines[i:j], i+1)
			i = j - 1
		case listRE.MatchString(raw):
			flush()
			col := len(listRE.FindString(raw))
			para = &block{line: i + 1, section: p.section}
			para.add(strings.TrimRight(raw[col:], " "), i, col)
		default:
			if para == nil {
				para = &block{line: i + 1, section: p.section}
			}
			col := len(raw) - len(strings.TrimLeft(raw, " "))
			para.add(trimmed, i, col)
		}
	}
	flush()
}

func (p *specParser) misplaced(line string) {
	for _, loc := range findIDs(line) {
		p.spec.Misplaced = append(p.spec.Misplaced, line[loc[2]:loc[3]])
	}
}

// findIDs finds the ids in text, except those in a code span (examples).
func findIDs(text string) [][]int {
	var out [][]int
	for _, loc := range idRE.FindAllStringSubmatchIndex(text, -1) {
		if loc[0] > 0 && text[loc[0]-1] == '`' {
			continue
		}
		out = append(out, loc)
	}
	return out
}

// splitRow splits a table row into its cells, trimmed, and the column each
// starts at; `\|` does not split.
func splitRow(line string) ([]string, []int) {
	start := strings.Index(line, "|") + 1
	end := strings.LastIndex(line, "|")
	if end < start {
		end = len(line)
	}
	var cells []string
	var cols []int
	from := start
	emit := func(to int) {
		raw := line[from:to]
		lead := len(raw) - len(strings.TrimLeft(raw, " "))
		cells = append(cells, strings.TrimSpace(raw))
		cols = append(cols, from+lead)
	}
	for i := start; i < end; i++ {
		if line[i] == '\\' && i+1 < end && line[i+1] == '|' {
			i++
			continue
		}
		if line[i] == '|' {
			emit(i)
			from = i + 1
		}
	}
	emit(end)
	return cells, cols
}

// rowTable reports whether every row of a table with this header is a rule
// of its own: an error table (a column "Code") or a table whose header
// states the obligation ("The driver MUST").
func rowTable(header []string) bool {
	for _, h := range header {
		if h == "Code" || keywordRE.MatchString(h) {
			return true
		}
	}
	return false
}

// ruleColumns is how many leading columns of a rule row make its sentence:
// up to the code, or up to the column that states the obligation; the
// core's reaction after it is not the driver's rule.
func ruleColumns(header []string) int {
	for i, h := range header {
		if h == "Code" || keywordRE.MatchString(h) {
			return i + 1
		}
	}
	return len(header)
}

// skippedColumn is a column of field markers (REQUIRED/OPTIONAL): §4.1
// states what they mean, once.
func skippedColumn(h string) bool { return h == "Req." || h == "Required?" }

func (p *specParser) table(lines []string, first int) {
	if len(lines) < 2 {
		return
	}
	header, _ := splitRow(lines[0])
	p.misplaced(lines[0])
	rows := rowTable(header)
	for k, line := range lines[2:] {
		cells, cols := splitRow(line)
		lineNo := first + 2 + k
		if rows {
			p.row(header, cells, lineNo, cols[0]+len(cells[0]))
			continue
		}
		for c, cell := range cells {
			if c < len(header) && skippedColumn(header[c]) {
				p.misplaced(cell)
				continue
			}
			prefix := ""
			if c > 0 {
				prefix = strings.TrimSpace(idRE.ReplaceAllString(cells[0], "")) + ": "
			}
			b := block{line: lineNo, section: p.section, prefix: prefix}
			b.add(cell, lineNo-1, cols[c])
			p.block(b)
		}
	}
}

// row handles a row of a rule table: its id, if any, is in its first cell
// and covers the whole row. end is the column where the first cell ends.
func (p *specParser) row(header, cells []string, line, end int) {
	var ids [][]string
	for _, loc := range findIDs(cells[0]) {
		ids = append(ids, []string{"", cells[0][loc[2]:loc[3]]})
	}
	for _, c := range cells[1:] {
		p.misplaced(c)
	}
	n := min(ruleColumns(header), len(cells))
	parts := make([]string, 0, n)
	for _, c := range cells[:n] {
		parts = append(parts, strings.TrimSpace(idRE.ReplaceAllString(c, "")))
	}
	text := strings.Join(parts, " → ")
	if p.skipped() {
		for _, m := range ids {
			p.spec.Misplaced = append(p.spec.Misplaced, m[1])
		}
		return
	}
	if len(ids) == 0 {
		p.spec.Untagged = append(p.spec.Untagged, Untagged{Section: p.section, Text: text, Line: line, Row: true, AtLine: line - 1, AtCol: end, Own: text})
		return
	}
	for _, m := range ids {
		p.add(Sentence{ID: m[1], Section: p.section, Text: text, Line: line})
	}
}

func (p *specParser) skipped() bool { return skippedSections[p.section] }

func (p *specParser) add(s Sentence) {
	p.seen[s.ID]++
	p.spec.Sentences = append(p.spec.Sentences, s)
}

// block splits a block into sentences. An id tags the sentence right
// before it; the text between two ids, or between an id and the block's
// end, may hold more sentences, and only the last of them before an id is
// tagged by it.
func (p *specParser) block(b block) {
	locs := findIDs(b.text)
	start := 0
	var last string // the sentence the previous id tagged, for ids in a row
	for _, loc := range locs {
		spans := splitSentences(b.text[start:loc[0]])
		id := b.text[loc[2]:loc[3]]
		base := start
		start = loc[1]
		if len(spans) == 0 {
			// Another id for the sentence the previous one tagged.
			if last == "" {
				p.spec.Misplaced = append(p.spec.Misplaced, id)
				continue
			}
			p.tag(b, last, id)
			continue
		}
		for _, sp := range spans[:len(spans)-1] {
			p.check(b, base, sp)
		}
		sp := spans[len(spans)-1]
		last = b.text[base+sp[0] : base+sp[1]]
		p.tag(b, last, id)
	}
	for _, sp := range splitSentences(b.text[start:]) {
		p.check(b, start, sp)
	}
}

func (p *specParser) tag(b block, sentence, id string) {
	if p.skipped() {
		p.spec.Misplaced = append(p.spec.Misplaced, id)
		return
	}
	p.add(Sentence{ID: id, Section: b.section, Text: b.prefix + sentence, Line: b.line})
}

// notRules are sentences that use a keyword as a word, not as an
// obligation (a distinctive part of each).
var notRules = []string{
	"Change a documented rule (a size limit, a MUST)",
	"make an OPTIONAL field REQUIRED",
	"Empty: only the REQUIRED RPCs are implemented",
	"to a REQUIRED RPC or to an OPTIONAL RPC it advertises: it contradicts",
	"(string, REQUIRED",
	"Earlier revisions said SHOULD",
	"Implementations MUST therefore:",
}

// check records an untagged sentence that states an obligation; sp is its
// span in b.text[base:].
func (p *specParser) check(b block, base int, sp [2]int) {
	s := b.text[base+sp[0] : base+sp[1]]
	if p.skipped() || !keywordRE.MatchString(stripCode(s)) {
		return
	}
	for _, n := range notRules {
		if strings.Contains(s, n) {
			return
		}
	}
	line, col := b.pos(base + sp[1])
	p.spec.Untagged = append(p.spec.Untagged, Untagged{Section: b.section, Text: b.prefix + s, Line: line + 1, AtLine: line, AtCol: col, Own: s})
}

var (
	codeRE = regexp.MustCompile("`[^`]*`")
	linkRE = regexp.MustCompile(`\[[^\]]*\]\([^)]*\)`)
)

// stripCode removes `code spans`, where capital words are names, and links,
// whose text names sections.
func stripCode(s string) string {
	return linkRE.ReplaceAllString(codeRE.ReplaceAllString(s, ""), "")
}

// splitSentences returns the spans of the sentences of text: a sentence
// ends at '.', '!' or '?' (possibly inside a closing **, ) or `) followed
// by a space or the end, except in "e.g." and "i.e.".
func splitSentences(text string) [][2]int {
	var out [][2]int
	emit := func(from, to int) {
		for from < to && text[from] == ' ' {
			from++
		}
		for to > from && text[to-1] == ' ' {
			to--
		}
		if to > from {
			out = append(out, [2]int{from, to})
		}
	}
	start := 0
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c != '.' && c != '!' && c != '?' {
			continue
		}
		j := i + 1
		for j < len(text) && (text[j] == '*' || text[j] == ')' || text[j] == '`') {
			j++
		}
		if j < len(text) && text[j] != ' ' {
			continue
		}
		if strings.HasSuffix(text[:i+1], "e.g.") || strings.HasSuffix(text[:i+1], "i.e.") {
			continue
		}
		emit(start, j)
		start = j
		i = j - 1
	}
	emit(start, len(text))
	return out
}

// String renders an untagged sentence for an error message.
func (u Untagged) String() string {
	kind := "sentence"
	if u.Row {
		kind = "error-table row"
	}
	return fmt.Sprintf("docs/driver-api.md:%d §%s %s without an id: %s", u.Line, u.Section, kind, u.Text)
}
