package archtest

import (
	"slices"
	"strings"
	"testing"
)

// The code facts come out of real source as ARCHITECTURE.md names them.
func TestCodeFactsFromFixture(t *testing.T) {
	t.Parallel()
	f, err := loadFacts("./testdata/archfixture")
	if err != nil {
		t.Fatal(err)
	}
	wantLocks := []string{"archfixture.T.Mutex", "archfixture.T.inner.rw", "archfixture.T.mu", "archfixture.T.p", "archfixture.global.mu", "archfixture.plain"}
	if got := itemNames(f.locks); !slices.Equal(got, wantLocks) {
		t.Errorf("locks %v, want %v", got, wantLocks)
	}
	var gos []string
	for _, g := range f.goStmts {
		gos = append(gos, g.name)
	}
	wantGos := []string{"archfixture.T.run", "archfixture.start", "archfixture.start", "archfixture.start", "archfixture.helper", "archfixture.T.run", "archfixture.background"}
	if !slices.Equal(gos, wantGos) {
		t.Errorf("go statements listed under %v, want %v", gos, wantGos)
	}
	for _, fn := range []string{"archfixture.T.run", "archfixture.helper", "archfixture.start", "archfixture.background"} {
		if !slices.Contains(f.funcs, fn) {
			t.Errorf("functions %v lack %s", f.funcs, fn)
		}
	}
	if !slices.Contains(f.packages, "internal/archtest") || !slices.Contains(f.packages, "orchestrator") {
		t.Errorf("packages %v", f.packages)
	}
}

// A small world the doctored docs below are checked against.
var (
	fakeFacts = &codeFacts{
		packages: []string{"eng", "eng/sub", "internal/help", "internal/more"},
		locks:    []codeItem{{"eng.Engine.mu", "eng/e.go:1"}, {"eng.node.mu", "eng/n.go:2"}, {"sub.Thing.mu", "eng/sub/t.go:3"}, {"sub.node.mu", "eng/sub/n.go:4"}},
		funcs:    []string{"eng.New", "eng.node.pump", "eng.Engine.Close", "sub.Thing.loop", "sub.node.pump"},
		goStmts:  []codeItem{{"eng.node.pump", "eng/n.go:10"}, {"eng.Engine.Close", "eng/e.go:20"}, {"sub.Thing.loop", "eng/sub/t.go:30"}},
	}
	fakeRules = map[string][]string{
		"eng":          {module + "/eng/sub", "github.com/x/y/"},
		"eng/sub":      {},
		"internal/...": {},
	}
	goodDoc = "# Doc\n\n" +
		"| package | one job | may import |\n" +
		"|---|---|---|\n" +
		"| `eng` | the engine | `eng/sub`, `github.com/x/y/`; y only for its parser |\n" +
		"| `eng/sub` | a room | the standard library |\n" +
		"| `internal/*` | helpers | — |\n" +
		"\n" +
		"| goroutine | owner | ends when |\n" +
		"|---|---|---|\n" +
		"| pump (`eng.node.pump()`) | the node | it ends |\n" +
		"| the closer | `Engine.Close()` | done |\n" +
		"| a thing's loop (`sub.Thing.loop()`, after `eng.New()`) | `Thing` | stop |\n" +
		"| a timer (`time.AfterFunc`) | nobody | once |\n" +
		"\n" +
		"| lock | guards |\n" +
		"|---|---|\n" +
		"| `Engine.mu` | the map |\n" +
		"| `eng.node.mu` / `sub.node.mu` (`pipe|s`) | a node's state / a sub-node's |\n" +
		"| `Thing.mu` | a thing |\n"
)

func TestDocCheckerPassesAGoodDoc(t *testing.T) {
	t.Parallel()
	if p := checkDoc(goodDoc, fakeFacts, fakeRules); len(p) != 0 {
		t.Fatalf("problems in a doc true to the code:\n%s", strings.Join(p, "\n"))
	}
}

// Every kind of drift fails, and the message says which row to add,
// change or remove.
func TestDocCheckerCatchesDrift(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, old, new, want string
	}{
		{"a rule without a row", "| `eng/sub` | a room | the standard library |\n", "", "rooms table: add a row | `eng/sub` | (its job) | the standard library |"},
		{"a row for no package", "| `internal/*` | helpers | — |\n", "| `internal/*` | helpers | — |\n| `gone` | old | — |\n", "remove the row `gone`: no package of the module is named so"},
		{"a wildcard for no package", "| `internal/*` | helpers | — |\n", "| `internal/*` | helpers | — |\n| `cmd/*` | mains | — |\n", "remove the row `cmd/*`: no package of the module is under it"},
		{"an import the rule lacks", "`eng/sub`, `github.com/x/y/`; y", "`eng/sub`, `github.com/x/y/`, `internal/help`; y", "row `eng` may import `eng/sub`, `github.com/x/y/`, `internal/help`, but internal/archtest allows `eng/sub`, `github.com/x/y/`: make its third column start with \"`eng/sub`, `github.com/x/y/`\""},
		{"an import the row lacks", "`eng/sub`, `github.com/x/y/`; y", "`eng/sub`; y", "make its third column start with \"`eng/sub`, `github.com/x/y/`\""},
		{"a note names no import", "| `eng/sub` | a room | the standard library |", "| `eng/sub` | a room | `eng`; never `eng` |", "row `eng/sub` may import `eng`, but internal/archtest allows only the standard library"},
		{"a package with no row", "| `internal/*` | helpers | — |\n", "| `internal/help` | one helper | — |\n", "package internal/more has no row"},
		{"a lock without a row", "| `Thing.mu` | a thing |\n", "", "locks table: add a row | `Thing.mu` | (what it guards) | for the lock at eng/sub/t.go:3"},
		{"an ambiguous lock gets its package", " / `sub.node.mu` (`pipe|s`)", "", "locks table: add a row | `sub.node.mu` |"},
		{"a lock that is gone", "| `Thing.mu` | a thing |\n", "| `Thing.mu` | a thing |\n| `Thing.oldMu` | history |\n", "locks table line 21: remove `Thing.oldMu`: no struct field of that name"},
		{"an ambiguous lock", "`eng.node.mu` / `sub.node.mu`", "`node.mu`", "`node.mu` is ambiguous: write one of `eng.node.mu`, `sub.node.mu`"},
		{"a lock in prose", "| `Thing.mu` | a thing |\n", "| `Thing.mu` | a thing |\n| the table mutexes | tables |\n", "\"the table mutexes\" names no lock"},
		{"a goroutine without a row", "| pump (`eng.node.pump()`) | the node | it ends |\n", "| pump (`eng.node.pump`) | the node | it ends |\n", "goroutines table: add a row naming `eng.node.pump()` for the go statement at eng/n.go:10"},
		{"a goroutine named only in the third column", "| the closer | `Engine.Close()` | done |\n", "| the closer | `Engine` | `Engine.Close()` |\n", "add a row naming `Engine.Close()` for the go statement at eng/e.go:20"},
		{"a function that is gone", "`eng.New()`", "`eng.Old()`", "remove or rename `eng.Old()`: no function or method of that name exists"},
		{"an ambiguous function", "pump (`eng.node.pump()`)", "pump (`node.pump()`, `eng.node.pump()`)", "`node.pump()` is ambiguous: write one of `eng.node.pump()`, `sub.node.pump()`"},
		{"no locks table", "| lock | guards |", "| locks | guards |", "locks table: want one table whose header starts with \"| lock |\", found 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(goodDoc, tt.old) {
				t.Fatalf("the good doc has no %q", tt.old)
			}
			doc := strings.Replace(goodDoc, tt.old, tt.new, 1)
			problems := checkDoc(doc, fakeFacts, fakeRules)
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Fatalf("want a problem containing %q, got:\n%s", tt.want, strings.Join(problems, "\n"))
			}
		})
	}
}
