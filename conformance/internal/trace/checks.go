package trace

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Preflight is the name under which the matrix lists the rules the suite
// checks before its tests run (reaching the driver, Probe, the identity).
const Preflight = "(preflight)"

// Checks is what the suite's source says about the ids.
type Checks struct {
	// ByID lists, for each id a rule cites, the suite's tests whose code can
	// fail with that rule, directly or through the helpers it calls.
	ByID map[string][]string
	// Rules maps each rule variable to the id it cites.
	Rules map[string]string
	// Problems are rules with a malformed id or that no code uses.
	Problems []string
}

// ReadChecks parses the conformance package in dir (its non-test files)
// and finds, for every test of suiteTests, the rules (package-level
// variables `ruleX = rule{"R-...", "..."}`) its function reaches through the
// package's functions and methods.
func ReadChecks(dir string) (*Checks, error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	funcs := map[string][]*ast.FuncDecl{} // by name; methods too
	rules := map[string]string{}
	type test struct{ name, fn string }
	var tests []test
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") || strings.HasPrefix(n, "zz_generated") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, 0)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	c := &Checks{ByID: map[string][]string{}, Rules: rules}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				funcs[d.Name.Name] = append(funcs[d.Name.Name], d)
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					vs, ok := sp.(*ast.ValueSpec)
					if !ok {
						continue
					}
					for i, v := range vs.Values {
						if id, ok := ruleID(v); ok && i < len(vs.Names) {
							if !ValidID(id) {
								c.Problems = append(c.Problems, fmt.Sprintf("rule %s cites %q, which is not an id", vs.Names[i].Name, id))
							}
							rules[vs.Names[i].Name] = id
						}
					}
				}
			}
		}
	}
	// The tests: tc("Group/name", "§x", capability, "checks", testFunc).
	for _, d := range funcs["suiteTests"] {
		ast.Inspect(d, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 5 {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || id.Name != "tc" {
				return true
			}
			lit, ok1 := call.Args[0].(*ast.BasicLit)
			fn, ok2 := call.Args[len(call.Args)-1].(*ast.Ident)
			if ok1 && ok2 {
				name, _ := strconv.Unquote(lit.Value)
				tests = append(tests, test{name, fn.Name})
			}
			return true
		})
	}
	// reach returns the rule variables reachable from the named functions.
	reach := func(roots ...string) map[string]bool {
		found := map[string]bool{}
		seen := map[string]bool{}
		stack := append([]string(nil), roots...)
		for len(stack) > 0 {
			fn := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[fn] {
				continue
			}
			seen[fn] = true
			for _, d := range funcs[fn] {
				ast.Inspect(d, func(n ast.Node) bool {
					id, ok := n.(*ast.Ident)
					if !ok {
						return true
					}
					if _, ok := rules[id.Name]; ok {
						found[id.Name] = true
					}
					if _, ok := funcs[id.Name]; ok && !seen[id.Name] && !entryPoints[id.Name] {
						stack = append(stack, id.Name)
					}
					return true
				})
			}
		}
		return found
	}
	used := map[string]bool{}
	for _, tc := range tests {
		for r := range reach(tc.fn) {
			used[r] = true
			c.ByID[rules[r]] = appendUnique(c.ByID[rules[r]], tc.name)
		}
	}
	// A check fails only through a rule, so that every failure prints the
	// sentence it enforces: no direct t.Errorf or t.Fatalf in the suite's
	// code (the rule methods themselves and RunT's refusal of an unusable
	// Config aside).
	for name, decls := range funcs {
		for _, d := range decls {
			if name == "RunT" || isRuleMethod(d) {
				continue
			}
			ast.Inspect(d, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Errorf" && sel.Sel.Name != "Fatalf") {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "t" {
					pos := fset.Position(call.Pos())
					c.Problems = append(c.Problems, fmt.Sprintf("%s:%d: %s fails with t.%s, not through a rule: the failure would not print the sentence it enforces", filepath.Base(pos.Filename), pos.Line, name, sel.Sel.Name))
				}
				return true
			})
		}
	}
	// What RunT reaches outside the tests: the preflight and the sweep.
	for r := range reach("RunT") {
		if !used[r] {
			c.ByID[rules[r]] = appendUnique(c.ByID[rules[r]], Preflight)
		}
		used[r] = true
	}
	for name := range rules {
		if !used[name] {
			c.Problems = append(c.Problems, fmt.Sprintf("rule %s (%s) is used by no test", name, rules[name]))
		}
	}
	sort.Strings(c.Problems)
	for id := range c.ByID {
		sort.Strings(c.ByID[id])
	}
	return c, nil
}

// entryPoints run the whole suite; reaching them from a test (through a
// call named like them, e.g. t.Run) would credit every test with every
// rule, so the walk stops there.
var entryPoints = map[string]bool{"Run": true, "RunT": true, "suiteTests": true, "Tests": true}

// isRuleMethod reports whether d is a method of rule (errorf, fatalf) or
// of rt, the binary's implementation of T (which reports a panic itself).
func isRuleMethod(d *ast.FuncDecl) bool {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return false
	}
	typ := d.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && (id.Name == "rule" || id.Name == "rt")
}

// ruleID returns the id of a `rule{"R-...", ...}` literal.
func ruleID(e ast.Expr) (string, bool) {
	cl, ok := e.(*ast.CompositeLit)
	if !ok || len(cl.Elts) == 0 {
		return "", false
	}
	if t, ok := cl.Type.(*ast.Ident); !ok || t.Name != "rule" {
		return "", false
	}
	lit, ok := cl.Elts[0].(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
