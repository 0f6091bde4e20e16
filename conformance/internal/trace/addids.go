package trace

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// stopWords are left out of a proposed id.
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "driver": true, "it": true, "its": true, "of": true, "to": true,
	"for": true, "and": true, "or": true, "in": true, "on": true, "by": true, "with": true, "that": true,
	"this": true, "is": true, "be": true, "as": true, "when": true, "which": true, "must": true,
	"should": true, "shall": true, "every": true, "each": true, "any": true, "s": true, "e": true,
	"g": true, "are": true, "from": true, "if": true, "then": true, "they": true, "them": true, "at": true,
	"so": true, "than": true, "also": true, "there": true, "therefore": true, "does": true, "do": true,
	"one": false, "not": false,
}

// ProposeID proposes an id for an untagged sentence: its section and the
// first words that say something. taken holds the ids in use.
func ProposeID(u Untagged, taken map[string]bool) string {
	text := strings.ToLower(linkRE.ReplaceAllString(u.Own, ""))
	if parts := strings.Split(text, " → "); u.Row && strings.HasPrefix(parts[len(parts)-1], "`") {
		// An error-table row is best named by its code, then its condition.
		text = parts[len(parts)-1] + " " + strings.Join(parts[:len(parts)-1], " ")
	}
	text = strings.ReplaceAll(text, "_", "-")
	var words []string
	for _, w := range regexp.MustCompile(`[a-z0-9]+(?:-[a-z0-9]+)*`).FindAllString(text, -1) {
		if stopWords[w] {
			continue
		}
		words = append(words, w)
		if len(strings.Join(words, "-")) >= 22 || len(words) == 4 {
			break
		}
	}
	base := "R-" + u.Section + "-" + strings.Join(words, "-")
	id := base
	for n := 2; taken[id]; n++ {
		id = fmt.Sprintf("%s-%d", base, n)
	}
	taken[id] = true
	return id
}

// AddIDs returns src with a proposed id after every untagged sentence and
// in every untagged error-table row, and the ids it added.
func AddIDs(src string) (string, []string) {
	spec := Parse(src)
	taken := map[string]bool{}
	for _, s := range spec.Sentences {
		taken[s.ID] = true
	}
	type ins struct {
		line, col int
		id        string
	}
	var all []ins
	var added []string
	for _, u := range spec.Untagged {
		id := ProposeID(u, taken)
		all = append(all, ins{u.AtLine, u.AtCol, id})
		added = append(added, id)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].line != all[j].line {
			return all[i].line > all[j].line
		}
		return all[i].col > all[j].col
	})
	lines := strings.Split(src, "\n")
	for _, x := range all {
		l := lines[x.line]
		lines[x.line] = l[:x.col] + " [" + x.id + "]" + l[x.col:]
	}
	return strings.Join(lines, "\n"), added
}
