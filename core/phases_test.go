package core_test

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// controllers is the directory of the controller packages, from the core
// module's directory, where the test runs.
const controllers = "internal/controller"

// phaseSection starts the section of docs/architecture.md that lists every
// controller's phases; the next heading ends it.
const phaseSection = "The phases, in order"

// phaseDocFormat says how to document a phase list, for the failures.
const phaseDocFormat = `doc.go: a paragraph whose last line ends in "phases:" (or "steps:" for a step table), then a numbered list "1. name (file.go): what it does"; ` +
	"docs/architecture.md: in the package's bullet of the section \"" + phaseSection + "\", `name (what it does) → name (…) → …`"

// phaseList is one ordered list of phases, and where it comes from.
type phaseList struct {
	names []string
	where string
}

// TestPhaseDocs fails when the phases a controller runs and the phases its
// documentation lists differ: the package's doc.go and its bullet in
// docs/architecture.md must each list, in order, what every phase.Run call
// of the package passes, and every step table (a map or slice of functions
// that return a phase.Result, such as the Machine's deletion flow).
// Documented phases that no code runs fail too. The lists come from the
// production code, so a new controller is covered without touching the
// test. A phase's documented name is its function's, less a reconcile or
// step prefix, with a lower-case first word: r.reconcileVMCheck is vmCheck.
func TestPhaseDocs(t *testing.T) {
	code, docs := map[string][]phaseList{}, map[string][]phaseList{}
	err := filepath.WalkDir(controllers, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		pkg := strings.TrimPrefix(filepath.ToSlash(path), controllers+"/")
		c, doc := readPackage(t, path)
		code[pkg], docs[pkg] = c, doc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	arch := architecturePhases(t, "../docs/architecture.md")

	runs := 0
	pkgs := map[string]bool{}
	for pkg := range code {
		pkgs[pkg] = true
		runs += len(code[pkg])
	}
	for pkg := range arch {
		pkgs[pkg] = true
	}
	// A parser that no longer sees phase.Run would pass vacuously.
	if runs < 5 {
		t.Fatalf("found only %d phase lists under core/%s; the test no longer reads the controllers", runs, controllers)
	}
	for _, pkg := range slices.Sorted(func(yield func(string) bool) {
		for p := range pkgs {
			if !yield(p) {
				return
			}
		}
	}) {
		comparePhases(t, pkg, "doc.go", code[pkg], docs[pkg])
		comparePhases(t, pkg, "docs/architecture.md", code[pkg], arch[pkg])
	}
}

// comparePhases reports the lists of code and of the document doc that have
// no equal in the other.
func comparePhases(t *testing.T, pkg, doc string, code, documented []phaseList) {
	t.Helper()
	var onlyCode []phaseList
	rest := slices.Clone(documented)
	for _, c := range code {
		i := slices.IndexFunc(rest, func(d phaseList) bool { return slices.Equal(c.names, d.names) })
		if i < 0 {
			onlyCode = append(onlyCode, c)
			continue
		}
		rest = slices.Delete(rest, i, i+1)
	}
	if len(onlyCode) == 0 && len(rest) == 0 {
		return
	}
	var b strings.Builder
	switch {
	case len(rest) == 0:
		fmt.Fprintf(&b, "%s runs phases that %s does not document:\n", pkg, doc)
	case len(onlyCode) == 0:
		fmt.Fprintf(&b, "%s: %s documents phases that no phase.Run or step table runs (stale):\n", pkg, doc)
	default:
		fmt.Fprintf(&b, "%s: the phases %s documents differ from the code's:\n", pkg, doc)
	}
	for _, c := range onlyCode {
		fmt.Fprintf(&b, "  code       %s  (%s)\n", strings.Join(c.names, " → "), c.where)
	}
	for _, d := range rest {
		fmt.Fprintf(&b, "  documented %s  (%s)\n", strings.Join(d.names, " → "), d.where)
	}
	b.WriteString("Format: " + phaseDocFormat)
	t.Error(b.String())
}

// readPackage returns the phase lists of the production code in dir and
// those its package comment documents.
func readPackage(t *testing.T, dir string) (code, doc []phaseList) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		// Only what a build compiles: no file another platform or a
		// build tag leaves out.
		if ok, err := build.Default.MatchFile(dir, name); err != nil || !ok {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		if f.Doc != nil {
			doc = append(doc, docPhases(t, filepath.Join(dir, name), f.Doc.Text())...)
		}
	}
	steps := stepTypes(files)
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			var fns []ast.Expr
			kind := ""
			switch n := n.(type) {
			case *ast.CallExpr:
				if isQualified(n.Fun, "phase", "Run") && len(n.Args) > 2 {
					fns, kind = n.Args[2:], "phase.Run"
				}
			case *ast.CompositeLit:
				if isStepTable(n.Type, steps) {
					kind = "step table"
					for _, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							e = kv.Value
						}
						fns = append(fns, e)
					}
				}
			}
			if kind == "" {
				return true
			}
			pos := fset.Position(n.Pos())
			where := fmt.Sprintf("%s at %s:%d", kind, filepath.ToSlash(pos.Filename), pos.Line)
			var names []string
			for _, fn := range fns {
				switch fn := fn.(type) {
				case *ast.SelectorExpr: // r.reconcileCreate
					names = append(names, phaseName(fn.Sel.Name))
				case *ast.Ident: // a plain function
					names = append(names, phaseName(fn.Name))
				default:
					t.Errorf("%s: a phase that is not a named function or method cannot be documented by name", where)
				}
			}
			code = append(code, phaseList{names: names, where: where})
			return true
		})
	}
	return code, doc
}

// stepTypes are the function types of the package that return a
// phase.Result: a table of them is a list of steps run in its order.
func stepTypes(files []*ast.File) map[string]bool {
	types := map[string]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if fn, ok := spec.Type.(*ast.FuncType); ok && fn.Results != nil {
				for _, r := range fn.Results.List {
					if isQualified(r.Type, "phase", "Result") {
						types[spec.Name.Name] = true
					}
				}
			}
			return false
		})
	}
	return types
}

// isStepTable tells whether a composite literal of type typ is a map or
// slice of step functions, or of phase.Func.
func isStepTable(typ ast.Expr, steps map[string]bool) bool {
	var elem ast.Expr
	switch typ := typ.(type) {
	case *ast.MapType:
		elem = typ.Value
	case *ast.ArrayType:
		elem = typ.Elt
	default:
		return false
	}
	if id, ok := elem.(*ast.Ident); ok {
		return steps[id.Name]
	}
	if ix, ok := elem.(*ast.IndexExpr); ok { // phase.Func[*scope]
		return isQualified(ix.X, "phase", "Func")
	}
	return false
}

// isQualified tells whether e is pkg.name.
func isQualified(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// phaseName is how the documentation names the phase function fn: without
// a reconcile or step prefix, its first word in lower case (VMCheck is
// vmCheck, NodeTemplate nodeTemplate).
func phaseName(fn string) string {
	for _, prefix := range []string{"reconcile", "step"} {
		if rest, ok := strings.CutPrefix(fn, prefix); ok && rest != "" && unicode.IsUpper(rune(rest[0])) {
			fn = rest
			break
		}
	}
	r := []rune(fn)
	for i := range r {
		if !unicode.IsUpper(r[i]) {
			break
		}
		// The last capital of an initialism before a lower-case letter
		// starts the next word: VMCheck is vm + Check.
		if i > 0 && i+1 < len(r) && unicode.IsLower(r[i+1]) {
			break
		}
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}

var (
	docItem       = regexp.MustCompile("^\\s+(\\d+)\\.\\s+`?(\\w+)`?")
	docIndented   = regexp.MustCompile(`^\s`)
	docListMarker = regexp.MustCompile(`(?i)(phases|steps):$`)
)

// docPhases reads the phase lists of a package comment: a paragraph whose
// last line ends in "phases:" or "steps:", then a numbered list whose items
// start with the phase's name.
func docPhases(t *testing.T, file, text string) []phaseList {
	t.Helper()
	lines := strings.Split(text, "\n")
	var lists []phaseList
	for i := 0; i < len(lines); i++ {
		if docIndented.MatchString(lines[i]) || !docListMarker.MatchString(lines[i]) {
			continue
		}
		l := phaseList{where: fmt.Sprintf("%s, the list after %q", filepath.ToSlash(file), strings.TrimSpace(lines[i]))}
		for i++; i < len(lines); i++ {
			line := lines[i]
			if strings.TrimSpace(line) == "" {
				continue
			}
			if !docIndented.MatchString(line) {
				i-- // the paragraph after the list may start another
				break
			}
			m := docItem.FindStringSubmatch(line)
			if m == nil {
				continue // an item's next line
			}
			if want := fmt.Sprint(len(l.names) + 1); m[1] != want {
				t.Errorf("%s: item %s where %s was due", l.where, m[1], want)
			}
			l.names = append(l.names, m[2])
		}
		if len(l.names) == 0 {
			t.Errorf("%s: no numbered list follows (%s)", l.where, phaseDocFormat)
		}
		lists = append(lists, l)
	}
	return lists
}

var (
	archBullet  = regexp.MustCompile("^- .*?\\(`([\\w/]+)/`\\)")
	archSimple  = regexp.MustCompile("^\\s*`?(\\w+)`?\\s*$")
	archLeading = regexp.MustCompile("^\\s*`?(\\w+)`?")
	archTrail   = regexp.MustCompile("`?(\\w+)`?\\s*$")
)

// architecturePhases reads the phase chains of docs/architecture.md's
// phase section, by package: in a bullet naming its package as (`pkg/`),
// each run of names joined by → (outside parentheses, which describe) is
// one list.
func architecturePhases(t *testing.T, path string) map[string][]phaseList {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n"+phaseSection)
	if !ok {
		t.Fatalf("%s has no section starting %q", path, phaseSection)
	}
	section, _, _ = strings.Cut(section, "\n#")
	var bullets []string
	for _, line := range strings.Split(section, "\n") {
		switch {
		case strings.HasPrefix(line, "- "):
			bullets = append(bullets, line)
		case strings.HasPrefix(line, "  ") && len(bullets) > 0:
			bullets[len(bullets)-1] += "\n" + line
		}
	}
	out := map[string][]phaseList{}
	for _, bullet := range bullets {
		first, _, _ := strings.Cut(bullet, "\n")
		segments := strings.Split(withoutParens(bullet), "→")
		if len(segments) < 2 {
			continue
		}
		m := archBullet.FindStringSubmatch(bullet)
		if m == nil {
			t.Errorf("docs/architecture.md: the bullet %q lists phases but names no package as (`pkg/`)", first)
			continue
		}
		pkg := m[1]
		where := "docs/architecture.md, the bullet " + strings.TrimPrefix(m[0], "- ")
		bad := func(s string) {
			t.Errorf("%s: cannot read a phase name in %q (%s)", where, strings.TrimSpace(s), phaseDocFormat)
		}
		var cur []string
		for i, s := range segments {
			switch {
			case i == 0:
				m := archTrail.FindStringSubmatch(s)
				if m == nil {
					bad(s)
					continue
				}
				cur = []string{m[1]}
			case i < len(segments)-1 && archSimple.MatchString(s):
				cur = append(cur, archSimple.FindStringSubmatch(s)[1])
			default:
				// The last name of a list, and what follows it: the end
				// of the bullet, or a sentence that starts another list.
				lead := archLeading.FindStringSubmatch(s)
				if lead == nil {
					bad(s)
					continue
				}
				out[pkg] = append(out[pkg], phaseList{names: append(cur, lead[1]), where: where})
				cur = nil
				if i < len(segments)-1 {
					trail := archTrail.FindStringSubmatch(s)
					if trail == nil {
						bad(s)
						continue
					}
					cur = []string{trail[1]}
				}
			}
		}
	}
	return out
}

// withoutParens drops what parentheses hold, at any depth: the
// descriptions of the phases.
func withoutParens(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
			if depth == 0 {
				b.WriteRune(' ')
			}
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}
