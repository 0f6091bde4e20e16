package core_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestNothingParsedAndIgnored fails when a manager flag or a field of the
// machine.sapcloud.io API is parsed but never used: accepted surface that
// does nothing is what issue 17 removed, and it must not grow back. It
// type-checks the production code of the core and of the manager's binary
// (go/packages), so a use is a use of that very field: a Status.LastOperation
// of a Machine is no use of a MachineSet's field of the same name.
//
//   - Flags: every Options field that AddFlags (core/manager/flags.go) binds
//     to a flag must be used in a function other than AddFlags,
//     DefaultOptions and Validate (or, for a flag with its own flag.Value
//     type, in that type's methods only when they pass it on).
//   - API fields: every field of a type of core/api/v1alpha1 must be used
//     (read, or written as output) outside that package, unless
//     surfaceAllowList says why it is only carried on the wire.
func TestNothingParsedAndIgnored(t *testing.T) {
	pkgs := loadProduction(t, "./...", "../cmd/machina-manager")
	uses := fieldUses(pkgs)

	t.Run("flags", func(t *testing.T) {
		options := structFields(t, pkgs, "github.com/machina-io/machina/core/manager", "Options")
		for flagName, field := range boundFlags(t, "manager/flags.go") {
			v, ok := options["Options."+field]
			if !ok {
				t.Errorf("--%s binds %s, which is no field of Options", flagName, field)
				continue
			}
			read := slices.ContainsFunc(uses[v], func(u use) bool {
				return !(u.file == filepath.Join("manager", "flags.go") && u.fn == "AddFlags") &&
					u.fn != "DefaultOptions" && u.fn != "Validate" && u.fn != "String" && u.fn != "Set"
			})
			if !read {
				t.Errorf("--%s (Options.%s) is parsed but never read: implement it, or remove or refuse it (docs/operating.md, Differences from MCM)", flagName, field)
			}
		}
	})

	t.Run("API fields", func(t *testing.T) {
		fields := structFields(t, pkgs, "github.com/machina-io/machina/core/api/v1alpha1", "")
		if len(fields) < 100 {
			t.Fatalf("found only %d API fields; the test no longer understands core/api/v1alpha1", len(fields))
		}
		for name, v := range fields {
			if _, ok := surfaceAllowList[name]; ok {
				continue
			}
			read := slices.ContainsFunc(uses[v], func(u use) bool {
				return !strings.HasPrefix(u.file, filepath.Join("api", "v1alpha1")+string(filepath.Separator))
			})
			if !read {
				t.Errorf("API field %s is never used outside core/api/v1alpha1: implement it, or document it as wire passthrough in surfaceAllowList", name)
			}
		}
		for f := range surfaceAllowList {
			if _, ok := fields[f]; !ok {
				t.Errorf("surfaceAllowList names %s, which is no API field any more", f)
			}
		}
	})
}

// surfaceAllowList holds the API fields that no controller reads because
// they are carried on the wire only (kept for objects MCM wrote, or for
// clients), each with the reason, as "Type.Field": "why". Add an entry only
// with the reason, and the row of docs/operating.md ("Differences from
// MCM") that says so.
var surfaceAllowList = map[string]string{
	"MachineSetStatus.LastOperation": "kept so that a value MCM stored round-trips; machina records operations on each Machine's status.lastOperation and a set's in its conditions and events",
	"Duration.Raw":                   "not a wire field (json:\"-\"): a stored value Go cannot parse, kept by UnmarshalJSON so the object decodes and is written back unchanged; read through Duration.Err, which the controllers call (InvalidDurations) to refuse the object with its field named",
}

// use is one use of a field: the file (relative to core, or to cmd's
// directory) and the function it is in ("" at package level).
type use struct{ file, fn string }

// loadProduction type-checks the production code (no tests) of the
// packages matched by patterns, relative to core.
func loadProduction(t *testing.T, patterns ...string) []*packages.Package {
	t.Helper()
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes |
			packages.NeedTypesInfo | packages.NeedImports | packages.NeedDeps,
		Context: t.Context(),
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatalf("loading %v: %v", patterns, err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatalf("the production code does not type-check")
	}
	return pkgs
}

// fieldUses maps every struct field used in the packages' files to its
// uses: selectors (x.F, reads and writes) and composite literal keys
// (T{F: v}). Generated deep copies are left out: copying a field is no use
// of it.
func fieldUses(pkgs []*packages.Package) map[*types.Var][]use {
	out := map[*types.Var][]use{}
	wd, _ := filepath.Abs(".")
	cmd := filepath.Join(filepath.Dir(wd), "cmd")
	for _, pkg := range pkgs {
		for _, file := range pkg.Syntax {
			name := pkg.Fset.Position(file.Pos()).Filename
			if strings.HasPrefix(filepath.Base(name), "zz_generated") {
				continue
			}
			rel, err := filepath.Rel(wd, name)
			if err != nil || strings.HasPrefix(rel, "..") {
				rel, _ = filepath.Rel(cmd, name)
			}
			for _, decl := range file.Decls {
				fn := ""
				if fd, ok := decl.(*ast.FuncDecl); ok {
					fn = fd.Name.Name
				}
				ast.Inspect(decl, func(n ast.Node) bool {
					if id, ok := n.(*ast.Ident); ok {
						if v, ok := pkg.TypesInfo.Uses[id].(*types.Var); ok && v.IsField() {
							out[v] = append(out[v], use{file: rel, fn: fn})
						}
					}
					return true
				})
			}
		}
	}
	return out
}

// structFields lists the named, exported, not embedded fields of the
// struct types of package path (only of type typeName when it is not
// empty) as "Type.Field".
func structFields(t *testing.T, pkgs []*packages.Package, path, typeName string) map[string]*types.Var {
	t.Helper()
	var pkg *types.Package
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		if p.PkgPath == path {
			pkg = p.Types
		}
	})
	if pkg == nil {
		t.Fatalf("package %s was not loaded", path)
	}
	out := map[string]*types.Var{}
	for _, name := range pkg.Scope().Names() {
		tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
		if !ok || (typeName != "" && name != typeName) {
			continue
		}
		st, ok := tn.Type().Underlying().(*types.Struct)
		if !ok {
			continue
		}
		for f := range st.Fields() {
			if f.Exported() && !f.Embedded() {
				out[name+"."+f.Name()] = f
			}
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
