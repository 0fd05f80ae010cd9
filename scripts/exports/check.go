package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// implicit are methods callers reach through an interface of the standard
// library (fmt, errors, encoding/json, encoding): they have no call site.
var implicit = map[string]bool{
	"String": true, "GoString": true, "Format": true, "Error": true, "Unwrap": true, "Is": true, "As": true,
	"MarshalJSON": true, "UnmarshalJSON": true, "MarshalText": true, "UnmarshalText": true,
	"MarshalYAML": true, "UnmarshalYAML": true,
}

// decl is one exported declaration of a checked package.
type decl struct {
	name string // as a reader writes it: gate.Score, gate.Metric.Valid, plan.Batch.Items
	pos  token.Position
	test bool // used from a _test.go file
	prod bool // used from a non-test file
}

// Finding is an exported identifier without a non-test use.
type Finding struct {
	Name string
	Pos  token.Position
	// Tested: used by tests; otherwise used nowhere.
	Tested bool
}

func (f Finding) String() string {
	what := "used nowhere"
	if f.Tested {
		what = "used only by tests"
	}
	return fmt.Sprintf("%s:%d: %s is %s", f.Pos.Filename, f.Pos.Line, f.Name, what)
}

// check loads the module in dir and returns the exported identifiers of
// the packages rel (paths relative to the module path) that no non-test
// file uses, in position order.
func check(dir string, rel []string) ([]Finding, error) {
	// First the import graph only (go list, cheap): a use of a checked
	// package's name can only be in the package itself or in one that
	// imports it. Then those packages, test variants included, with types.
	cfg := &packages.Config{Dir: dir, Tests: true, Mode: packages.NeedName | packages.NeedModule | packages.NeedImports}
	all, err := packages.Load(cfg, "./...")
	if err != nil {
		return nil, err
	}
	if err := loadErrors(all); err != nil {
		return nil, fmt.Errorf("loading %s: %w", dir, err)
	}
	targets := map[string]bool{}
	for _, p := range all {
		if p.Module != nil && p.Module.Main {
			for _, r := range rel {
				targets[path.Join(p.Module.Path, r)] = true
			}
			break
		}
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("%s: no package of the main module", dir)
	}
	var patterns []string
	for _, p := range all {
		if p.ID != p.PkgPath {
			continue // a test variant: its package is listed too
		}
		use := targets[p.PkgPath]
		for imp := range p.Imports {
			use = use || targets[imp]
		}
		if use && !slices.Contains(patterns, p.PkgPath) {
			patterns = append(patterns, p.PkgPath)
		}
	}
	// Test variants import what their package does plus the test files'
	// imports: load every package whose tests may import a target too.
	for _, p := range all {
		if p.ID == p.PkgPath {
			continue
		}
		for imp := range p.Imports {
			if targets[imp] && !slices.Contains(patterns, strings.TrimSuffix(p.PkgPath, "_test")) {
				patterns = append(patterns, strings.TrimSuffix(p.PkgPath, "_test"))
			}
		}
	}
	cfg.Mode = packages.NeedName | packages.NeedFiles | packages.NeedImports | packages.NeedTypes | packages.NeedTypesInfo | packages.NeedSyntax
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		return nil, err
	}
	if err := loadErrors(pkgs); err != nil {
		return nil, fmt.Errorf("loading %s: %w", dir, err)
	}
	decls := map[string]*decl{} // by declaration position
	seen := map[string]bool{}
	for _, p := range pkgs {
		if !targets[p.PkgPath] {
			continue // an external _test package has the path ..._test
		}
		seen[p.PkgPath] = true
		collect(p, decls)
	}
	for t := range targets {
		if !seen[t] {
			return nil, fmt.Errorf("package %s: not in the module", t)
		}
	}
	for _, p := range pkgs {
		for id, obj := range p.TypesInfo.Uses {
			d := decls[key(p.Fset, obj)]
			if d == nil {
				continue
			}
			if isTest(p.Fset.Position(id.Pos()).Filename) {
				d.test = true
			} else {
				d.prod = true
			}
		}
	}
	var out []Finding
	for _, d := range decls {
		if !d.prod {
			out = append(out, Finding{Name: d.name, Pos: d.pos, Tested: d.test})
		}
	}
	slices.SortFunc(out, func(a, b Finding) int {
		if c := strings.Compare(a.Pos.Filename, b.Pos.Filename); c != 0 {
			return c
		}
		return a.Pos.Offset - b.Pos.Offset
	})
	base, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if r, err := filepath.Rel(base, out[i].Pos.Filename); err == nil {
			out[i].Pos.Filename = r
		}
	}
	return out, nil
}

// loadErrors joins the errors of the loaded packages: a package that does
// not type-check could hide a use.
func loadErrors(pkgs []*packages.Package) error {
	var errs []string
	packages.Visit(pkgs, nil, func(p *packages.Package) {
		for _, e := range p.Errors {
			errs = append(errs, e.Error())
		}
	})
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// collect adds the exported declarations of p's non-test files: package
// level names, the exported methods and fields of its types.
func collect(p *packages.Package, decls map[string]*decl) {
	add := func(obj types.Object, name string) {
		if obj == nil || !obj.Exported() {
			return
		}
		k := key(p.Fset, obj)
		if decls[k] == nil {
			decls[k] = &decl{name: p.Name + "." + name, pos: p.Fset.Position(obj.Pos())}
		}
	}
	for _, f := range p.Syntax {
		if isTest(p.Fset.Position(f.Pos()).Filename) {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					add(p.TypesInfo.Defs[d.Name], d.Name.Name)
					continue
				}
				if implicit[d.Name.Name] {
					continue
				}
				if recv := recvName(d.Recv.List[0].Type); recv != "" && ast.IsExported(recv) {
					add(p.TypesInfo.Defs[d.Name], recv+"."+d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							add(p.TypesInfo.Defs[n], n.Name)
						}
					case *ast.TypeSpec:
						add(p.TypesInfo.Defs[s.Name], s.Name.Name)
						if !s.Name.IsExported() {
							continue
						}
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									add(p.TypesInfo.Defs[n], s.Name.Name+"."+n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
}

// recvName is the type name of a method receiver (T, *T, T[P], *T[P]).
func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// key identifies a declaration across the package's variants (the package
// and its test build type-check it twice, into different objects).
func key(fset *token.FileSet, obj types.Object) string {
	if !obj.Pos().IsValid() {
		return ""
	}
	pos := fset.Position(obj.Pos())
	return fmt.Sprintf("%s:%d:%d", pos.Filename, pos.Line, pos.Column)
}

func isTest(file string) bool { return strings.HasSuffix(file, "_test.go") }
