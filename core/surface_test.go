package core_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestNothingParsedAndIgnored fails when a manager flag or a field of the
// machine.sapcloud.io API is parsed but never read: accepted surface that
// does nothing is what issue 17 removed, and it must not grow back. It looks
// at the syntax of the production code of the core and of the manager's
// binary (go/ast, no type information, so a field counts as read when any
// selector of its name is used outside its declaration; a false pass is
// possible for common names, a false failure is not).
//
//   - Flags: every Options field that AddFlags (core/manager/flags.go) binds
//     to a flag must be used in a function other than AddFlags,
//     DefaultOptions and Validate.
//   - API fields: every field of a type of core/api/v1alpha1 must be used
//     outside that package, unless surfaceAllowList says why it is only
//     carried on the wire.
func TestNothingParsedAndIgnored(t *testing.T) {
	uses := selectorUses(t, []string{".", "../cmd/machina-manager"})

	t.Run("flags", func(t *testing.T) {
		for flagName, field := range boundFlags(t, "manager/flags.go") {
			read := slices.ContainsFunc(uses[field], func(u use) bool {
				return !(u.file == filepath.Join("manager", "flags.go") && u.fn == "AddFlags") &&
					u.fn != "DefaultOptions" && u.fn != "Validate"
			})
			if !read {
				t.Errorf("--%s (Options.%s) is parsed but never read: implement it, or remove or refuse it (docs/operating.md, Differences from MCM)", flagName, field)
			}
		}
	})

	t.Run("API fields", func(t *testing.T) {
		for _, f := range apiFields(t, "api/v1alpha1") {
			if _, ok := surfaceAllowList[f]; ok {
				continue
			}
			field := f[strings.Index(f, ".")+1:]
			read := slices.ContainsFunc(uses[field], func(u use) bool {
				return !strings.HasPrefix(u.file, filepath.Join("api", "v1alpha1")+string(filepath.Separator))
			})
			if !read {
				t.Errorf("API field %s is never read outside core/api/v1alpha1: implement it, or document it as wire passthrough in surfaceAllowList", f)
			}
		}
		for f := range surfaceAllowList {
			if !slices.Contains(apiFields(t, "api/v1alpha1"), f) {
				t.Errorf("surfaceAllowList names %s, which is no API field any more", f)
			}
		}
	})
}

// surfaceAllowList holds the API fields that no controller reads because
// they are carried on the wire only (kept for objects MCM wrote, or for
// clients), each with the reason, as "Type.Field": "why". Empty today:
// every field is read somewhere. Add an entry only with the reason, and
// the row of docs/operating.md ("Differences from MCM") that says so.
var surfaceAllowList = map[string]string{}

// use is one use of a selector: the file (relative to core, or to cmd's
// directory) and the function it is in ("" at package level).
type use struct{ file, fn string }

// selectorUses maps every selector name (x.Name) in the non-test Go files
// under dirs to its uses. Generated deep copies are left out: copying a
// field is no reading of it.
func selectorUses(t *testing.T, dirs []string) map[string][]use {
	t.Helper()
	out := map[string][]use{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			name := d.Name()
			if d.IsDir() {
				if name == "testdata" || (strings.HasPrefix(name, ".") && path != ".") {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "zz_generated") {
				return nil
			}
			file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			for _, decl := range file.Decls {
				fn := ""
				if fd, ok := decl.(*ast.FuncDecl); ok {
					fn = fd.Name.Name
				}
				ast.Inspect(decl, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.SelectorExpr:
						out[x.Sel.Name] = append(out[x.Sel.Name], use{file: path, fn: fn})
					case *ast.KeyValueExpr:
						// A composite literal's key sets the field; a
						// struct built for a driver message or a
						// status counts as using it.
						if k, ok := x.Key.(*ast.Ident); ok {
							out[k.Name] = append(out[k.Name], use{file: path, fn: fn})
						}
					}
					return true
				})
			}
			return nil
		})
		if err != nil {
			t.Fatalf("reading %s: %v", dir, err)
		}
	}
	return out
}

// boundFlags maps the flags AddFlags registers to the Options fields they
// set: fs.XxxVar(&o.Field, "name", ...) and fs.Var((*T)(&o.Field), "name", ...).
func boundFlags(t *testing.T, path string) map[string]string {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) < 2 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !strings.HasSuffix(sel.Sel.Name, "Var") {
			return true
		}
		lit, ok := call.Args[1].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			// A name given by a constant: look for the field anyway.
			lit = nil
		}
		field := addressedField(call.Args[0])
		if field == "" {
			return true
		}
		name := field
		if lit != nil {
			name, _ = strconv.Unquote(lit.Value)
		}
		out[name] = field
		return true
	})
	if len(out) < 20 {
		t.Fatalf("found only %d flags in %s; the test no longer understands AddFlags", len(out), path)
	}
	return out
}

// addressedField is Field of &o.Field, possibly converted: (*T)(&o.Field).
func addressedField(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.CallExpr:
			if len(x.Args) != 1 {
				return ""
			}
			e = x.Args[0]
		case *ast.ParenExpr:
			e = x.X
		case *ast.UnaryExpr:
			if x.Op != token.AND {
				return ""
			}
			if s, ok := x.X.(*ast.SelectorExpr); ok {
				return s.Sel.Name
			}
			return ""
		default:
			return ""
		}
	}
}

// apiFields lists the named fields of the struct types of the API package
// as "Type.Field"; embedded fields (TypeMeta, ObjectMeta, inline structs)
// are their own types' business.
func apiFields(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, path := range entries {
		if strings.HasSuffix(path, "_test.go") || strings.Contains(path, "zz_generated") {
			continue
		}
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return false
			}
			for _, f := range st.Fields.List {
				for _, name := range f.Names {
					if name.IsExported() {
						out = append(out, ts.Name.Name+"."+name.Name)
					}
				}
			}
			return false
		})
	}
	slices.Sort(out)
	return out
}
