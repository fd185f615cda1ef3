package archtest

// The check that docs/ARCHITECTURE.md is true to the code: its rooms
// table against go list and the import rules above, its locks table and
// its goroutines table against the engine's source (go/ast, go/types).
// The formats are written at the top of each table in ARCHITECTURE.md.

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

const archDoc = "../../docs/ARCHITECTURE.md"

// checkedPatterns are the packages whose locks and goroutines the doc
// must list.
var checkedPatterns = []string{module + "/orchestrator/...", module + "/tmuxctl", module + "/tools"}

func TestArchitectureDoc(t *testing.T) {
	t.Parallel()
	md, err := os.ReadFile(archDoc)
	if err != nil {
		t.Fatal(err)
	}
	facts, err := loadFacts(checkedPatterns...)
	if err != nil {
		t.Fatal(err)
	}
	if len(facts.packages) < 10 || len(facts.locks) < 10 || len(facts.goStmts) < 10 || len(facts.funcs) < 100 {
		t.Fatalf("the code facts look incomplete: %d packages, %d locks, %d go statements, %d functions", len(facts.packages), len(facts.locks), len(facts.goStmts), len(facts.funcs))
	}
	for _, p := range checkDoc(string(md), facts, allowed) {
		t.Errorf("docs/ARCHITECTURE.md: %s", p)
	}
}

// codeFacts is what the doc is checked against.
type codeFacts struct {
	packages []string   // every package of the module, relative to it ("cli", "orchestrator/screen")
	locks    []codeItem // "pkg.Type.field": every sync.Mutex/RWMutex struct field
	funcs    []string   // "pkg.f" and "pkg.Type.method": every declared function
	goStmts  []codeItem // per go statement, the name of the function it is listed under
}

// codeItem is a name and where in the code it is.
type codeItem struct{ name, pos string }

type listedPkg struct {
	ImportPath, Name, Dir, Export string
	GoFiles                       []string
	DepOnly                       bool
}

func goList(args ...string) ([]listedPkg, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	var pkgs []listedPkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

func rel(importPath string) string {
	return strings.TrimPrefix(strings.TrimPrefix(importPath, module), "/")
}

// loadFacts lists the module's packages and type-checks the checked ones
// (go list patterns) from source, their imports from the export data go
// list builds.
func loadFacts(checked ...string) (*codeFacts, error) {
	all, err := goList("-json=ImportPath", module+"/...")
	if err != nil {
		return nil, err
	}
	f := &codeFacts{}
	for _, p := range all {
		f.packages = append(f.packages, rel(p.ImportPath))
	}
	deps, err := goList(append([]string{"-export", "-deps", "-json=ImportPath,Name,Dir,GoFiles,Export,DepOnly"}, checked...)...)
	if err != nil {
		return nil, err
	}
	exports := map[string]string{}
	for _, p := range deps {
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok || file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	names := map[string]string{}
	for _, p := range deps {
		if p.DepOnly || !strings.HasPrefix(p.ImportPath, module) {
			continue
		}
		if other, ok := names[p.Name]; ok {
			return nil, fmt.Errorf("packages %s and %s are both named %s: the doc's names would be ambiguous", other, p.ImportPath, p.Name)
		}
		names[p.Name] = p.ImportPath
		var files []*ast.File
		for _, name := range p.GoFiles {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			files = append(files, af)
		}
		info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
		conf := types.Config{Importer: imp.(types.ImporterFrom)}
		tp, err := conf.Check(p.ImportPath, fset, files, info)
		if err != nil {
			return nil, fmt.Errorf("type-checking %s: %w", p.ImportPath, err)
		}
		for _, af := range files {
			f.add(fset, tp, info, af)
		}
	}
	return f, nil
}

// add records one file's locks, functions and go statements.
func (f *codeFacts) add(fset *token.FileSet, tp *types.Package, info *types.Info, af *ast.File) {
	pkg := tp.Name()
	where := func(p token.Pos) string {
		pos := fset.Position(p)
		return fmt.Sprintf("%s:%d", rel(tp.Path())+"/"+filepath.Base(pos.Filename), pos.Line)
	}
	for _, d := range af.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					f.structLocks(pkg+"."+s.Name.Name, s.Type, where)
				case *ast.ValueSpec: // var x sync.Mutex; var x struct{ mu sync.Mutex }; var x = struct{…}{…}
					for i, n := range s.Names {
						typ := s.Type
						if typ == nil && i < len(s.Values) {
							if cl, ok := s.Values[i].(*ast.CompositeLit); ok {
								typ = cl.Type
							}
						}
						if typ != nil {
							f.structLocks(pkg, &ast.StructType{Fields: &ast.FieldList{List: []*ast.Field{{Names: []*ast.Ident{n}, Type: typ}}}}, where)
						}
					}
				}
			}
		case *ast.FuncDecl:
			name := declName(pkg, d)
			f.funcs = append(f.funcs, name)
			if d.Body == nil {
				continue
			}
			ast.Inspect(d.Body, func(n ast.Node) bool {
				g, ok := n.(*ast.GoStmt)
				if !ok {
					return true
				}
				started := startedFunc(info, tp, g.Call.Fun)
				if started == "" {
					started = name
				}
				f.goStmts = append(f.goStmts, codeItem{started, where(g.Pos())})
				return true
			})
		}
	}
}

// structLocks records the mutex fields of a struct type, descending into
// fields whose type is an inline struct ("pkg.Type.field.mu").
func (f *codeFacts) structLocks(prefix string, typ ast.Expr, where func(token.Pos) string) {
	st, ok := typ.(*ast.StructType)
	if !ok {
		return
	}
	for _, field := range st.Fields.List {
		t := field.Type
		if star, ok := t.(*ast.StarExpr); ok {
			t = star.X
		}
		if sel, ok := t.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "sync" && (sel.Sel.Name == "Mutex" || sel.Sel.Name == "RWMutex") {
				if len(field.Names) == 0 { // embedded
					f.locks = append(f.locks, codeItem{prefix + "." + sel.Sel.Name, where(field.Pos())})
				}
				for _, n := range field.Names {
					f.locks = append(f.locks, codeItem{prefix + "." + n.Name, where(n.Pos())})
				}
				continue
			}
		}
		for _, n := range field.Names {
			f.structLocks(prefix+"."+n.Name, field.Type, where)
		}
	}
}

// declName is "pkg.f" or "pkg.Type.method".
func declName(pkg string, d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return pkg + "." + d.Name.Name
	}
	t := d.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return pkg + "." + id.Name + "." + d.Name.Name
	}
	return pkg + "." + d.Name.Name
}

// startedFunc names the function a go statement starts when it is one
// declared in a package of this module ("pkg.f", "pkg.Type.method"), and
// is "" otherwise: a function literal, a function value, or a function of
// the standard library or another module.
func startedFunc(info *types.Info, here *types.Package, fun ast.Expr) string {
	fun = ast.Unparen(fun)
	if ix, ok := fun.(*ast.IndexExpr); ok { // a generic function's instance
		fun = ix.X
	}
	var id *ast.Ident
	switch x := fun.(type) {
	case *ast.Ident:
		id = x
	case *ast.SelectorExpr:
		id = x.Sel
	default:
		return ""
	}
	fn, ok := info.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil || !strings.HasPrefix(fn.Pkg().Path(), module) {
		return ""
	}
	name := fn.Pkg().Name() + "."
	if sig, ok := fn.Type().(*types.Signature); ok && sig.Recv() != nil {
		rt := sig.Recv().Type()
		if p, ok := rt.(*types.Pointer); ok {
			rt = p.Elem()
		}
		if n, ok := rt.(*types.Named); ok {
			name += n.Obj().Name() + "."
		}
	}
	return name + fn.Name()
}

// A markdown table: its rows' cells, and the line each row is on.
type mdTable struct {
	rows  [][]string
	lines []int
}

// findTable finds the one table whose header's first cell is first.
func findTable(md, first string) (mdTable, error) {
	lines := strings.Split(md, "\n")
	var found []mdTable
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") {
			continue
		}
		head := splitRow(lines[i])
		if len(head) == 0 || head[0] != first || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "|-") && !strings.HasPrefix(lines[i+1], "|:") {
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "|") {
				i++
			}
			continue
		}
		var t mdTable
		for i += 2; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
			t.rows = append(t.rows, splitRow(lines[i]))
			t.lines = append(t.lines, i+1)
		}
		found = append(found, t)
	}
	if len(found) != 1 {
		return mdTable{}, fmt.Errorf("want one table whose header starts with %q, found %d", "| "+first+" |", len(found))
	}
	return found[0], nil
}

// splitRow splits a table row at the pipes outside backticks.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var b strings.Builder
	code := false
	for _, r := range line {
		switch {
		case r == '`':
			code = !code
		case r == '|' && !code:
			cells = append(cells, strings.TrimSpace(b.String()))
			b.Reset()
			continue
		}
		b.WriteRune(r)
	}
	return append(cells, strings.TrimSpace(b.String()))
}

var backticked = regexp.MustCompile("`([^`]+)`")

func codeSpans(s string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// checkDoc returns every way the doc differs from the code, each saying
// which row to add, change or remove.
func checkDoc(md string, f *codeFacts, rules map[string][]string) []string {
	var problems []string
	problems = append(problems, checkRooms(md, f, rules)...)
	problems = append(problems, checkLocks(md, f)...)
	problems = append(problems, checkGoroutines(md, f)...)
	return problems
}

// roomPattern turns a rooms-table name into an import-rule key: `cmd/*`
// is the rule "cmd/...".
func roomPattern(name string) string {
	if p, ok := strings.CutSuffix(name, "/*"); ok {
		return p + "/..."
	}
	return name
}

func roomName(key string) string {
	if p, ok := strings.CutSuffix(key, "/..."); ok {
		return p + "/*"
	}
	return key
}

// importName is how the rooms table writes an allowed import prefix:
// this module's packages relative to it, the rest as they are.
func importName(prefix string) string {
	if prefix == module {
		return "."
	}
	return strings.TrimPrefix(prefix, module+"/")
}

// mayImportCell is the rooms table's "may import" column for a rule.
func mayImportCell(imports []string) string {
	if len(imports) == 0 {
		return "the standard library"
	}
	var names []string
	for _, p := range imports {
		names = append(names, "`"+importName(p)+"`")
	}
	return strings.Join(names, ", ")
}

func effectiveRule(rules map[string][]string, key string) ([]string, bool) {
	if r, ok := rules[key]; ok {
		return r, true
	}
	p, wild := strings.CutSuffix(key, "/...")
	for k, r := range rules {
		if kp, ok := strings.CutSuffix(k, "/..."); ok && (key == kp || strings.HasPrefix(key, kp+"/") || wild && strings.HasPrefix(p, kp+"/")) {
			return r, true
		}
	}
	return nil, false
}

func covers(key, pkg string) bool {
	if p, ok := strings.CutSuffix(key, "/..."); ok {
		return pkg == p || strings.HasPrefix(pkg, p+"/")
	}
	return key == pkg
}

// checkRooms: one row per import rule (and optionally per package), every
// package covered by a row, and each row's "may import" (the code spans
// before the first ";") exactly its rule.
func checkRooms(md string, f *codeFacts, rules map[string][]string) []string {
	t, err := findTable(md, "package")
	if err != nil {
		return []string{"rooms table: " + err.Error()}
	}
	var problems []string
	rows := map[string]bool{}
	for i, row := range t.rows {
		spans := codeSpans(row[0])
		if len(row) < 3 || len(spans) == 0 {
			problems = append(problems, fmt.Sprintf("rooms table line %d: want | `package` | one job | may import |", t.lines[i]))
			continue
		}
		key := roomPattern(spans[0])
		if rows[key] {
			problems = append(problems, fmt.Sprintf("rooms table line %d: a second row for `%s`: remove one", t.lines[i], spans[0]))
		}
		rows[key] = true
		matched := false
		for _, p := range f.packages {
			matched = matched || covers(key, p)
		}
		if !matched {
			problems = append(problems, fmt.Sprintf("rooms table line %d: remove the row `%s`: no package of the module is %s (go list)", t.lines[i], spans[0], map[bool]string{true: "under it", false: "named so"}[strings.HasSuffix(key, "/...")]))
			continue
		}
		want, ok := effectiveRule(rules, key)
		if !ok {
			problems = append(problems, fmt.Sprintf("rooms table line %d: `%s` has no import rule in internal/archtest (allowed): add one", t.lines[i], spans[0]))
			continue
		}
		listed, _, _ := strings.Cut(row[2], ";")
		got := codeSpans(listed)
		var wantNames []string
		for _, p := range want {
			wantNames = append(wantNames, importName(p))
		}
		if !slices.Equal(sorted(got), sorted(wantNames)) {
			problems = append(problems, fmt.Sprintf("rooms table line %d: row `%s` may import %s, but internal/archtest allows %s: make its third column start with %q (a note may follow a \";\")", t.lines[i], spans[0], orNone(got), orNone(wantNames), mayImportCell(want)))
		}
	}
	var keys []string
	for k := range rules {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !rows[k] {
			problems = append(problems, fmt.Sprintf("rooms table: add a row | `%s` | (its job) | %s |", roomName(k), mayImportCell(rules[k])))
		}
	}
	for _, p := range f.packages {
		found := false
		for k := range rows {
			found = found || covers(k, p)
		}
		if !found {
			problems = append(problems, fmt.Sprintf("rooms table: package %s has no row: add | `%s` | (its job) | … |", p, p))
		}
	}
	return problems
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "only the standard library"
	}
	return "`" + strings.Join(sorted(s), "`, `") + "`"
}

// resolve finds the code names a doc name stands for: the name itself
// ("pkg.Type.mu") or the name with its package left out ("Type.mu").
func resolve(doc string, names []string) []string {
	var out []string
	for _, n := range names {
		_, rest, _ := strings.Cut(n, ".")
		if n == doc || rest == doc {
			out = append(out, n)
		}
	}
	return sorted(out)
}

// shortName is the shortest name the doc may use for a code name: without
// its package when that is unambiguous.
func shortName(name string, names []string) string {
	_, rest, _ := strings.Cut(name, ".")
	if len(resolve(rest, names)) == 1 {
		return rest
	}
	return name
}

func itemNames(items []codeItem) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.name)
	}
	return sorted(out)
}

// checkLocks: every lock in the code has a row naming it, and every lock
// the table names exists. A row's first column holds one or more locks,
// "`a.mu` / `b.mu`": the first code span of each part is the lock.
func checkLocks(md string, f *codeFacts) []string {
	t, err := findTable(md, "lock")
	if err != nil {
		return []string{"locks table: " + err.Error()}
	}
	var problems []string
	names := itemNames(f.locks)
	listed := map[string]bool{}
	for i, row := range t.rows {
		for part := range strings.SplitSeq(row[0], " / ") {
			spans := codeSpans(part)
			if len(spans) == 0 {
				problems = append(problems, fmt.Sprintf("locks table line %d: %q names no lock: write it as `Type.field` (or `pkg.Type.field`)", t.lines[i], strings.TrimSpace(part)))
				continue
			}
			gone := "remove `" + spans[0] + "`: no struct field of that name is a sync.Mutex or sync.RWMutex"
			if p := markListed(spans[0], "", gone, names, listed); p != "" {
				problems = append(problems, fmt.Sprintf("locks table line %d: %s", t.lines[i], p))
			}
		}
	}
	for _, l := range f.locks {
		if !listed[l.name] {
			problems = append(problems, fmt.Sprintf("locks table: add a row | `%s` | (what it guards) | for the lock at %s", shortName(l.name, names), l.pos))
			listed[l.name] = true // one message per lock
		}
	}
	return problems
}

// markListed marks the code name a doc name stands for as listed, or
// returns the problem: gone when it names nothing, or that it is
// ambiguous, naming the candidates (each with suffix).
func markListed(doc, suffix, gone string, names []string, listed map[string]bool) string {
	switch got := resolve(doc, names); len(got) {
	case 0:
		return gone
	case 1:
		listed[got[0]] = true
		return ""
	default:
		return fmt.Sprintf("`%s%s` is ambiguous: write one of `%s%s`", doc, suffix, strings.Join(got, suffix+"`, `"), suffix)
	}
}

// goFuncRef matches a function the goroutines table names: `name()`.
var goFuncRef = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\(\)$`)

// checkGoroutines: every go statement is listed under the function it
// starts (or, for a literal or another module's function, the function
// containing it), and every function the table names (`name()` in its
// first two columns) exists.
func checkGoroutines(md string, f *codeFacts) []string {
	t, err := findTable(md, "goroutine")
	if err != nil {
		return []string{"goroutines table: " + err.Error()}
	}
	var problems []string
	funcs := sorted(f.funcs)
	listed := map[string]bool{}
	for i, row := range t.rows {
		cells := row
		if len(cells) > 2 {
			cells = cells[:2]
		}
		for _, c := range cells {
			for _, s := range codeSpans(c) {
				m := goFuncRef.FindStringSubmatch(s)
				if m == nil {
					continue
				}
				gone := "remove or rename `" + s + "`: no function or method of that name exists"
				if p := markListed(m[1], "()", gone, funcs, listed); p != "" {
					problems = append(problems, fmt.Sprintf("goroutines table line %d: %s", t.lines[i], p))
				}
			}
		}
	}
	for _, g := range f.goStmts {
		if !listed[g.name] {
			problems = append(problems, fmt.Sprintf("goroutines table: add a row naming `%s()` for the go statement at %s", shortName(g.name, funcs), g.pos))
			listed[g.name] = true
		}
	}
	return problems
}
