package toolserver

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// domainEngines names, for each file that reads the engine, the views of
// it (engine.go) the file may use; every other file uses none. Only the
// wiring holds the concrete engine (the field o).
var domainEngines = map[string][]string{
	"terminal.go": {"terminals"}, "terminal_tools.go": {"terminals"},
	"semantic.go": {"semantic"}, "traces.go": {"traces"},
	"hosts.go": {"hosts"}, "realm.go": {"hosts"},
	"restore.go": {"lost"}, "fork.go": {"lost"},
	"agents.go": {"agents"}, "agentstate.go": {"agents"}, "agentrules.go": {"agents"}, "waiting.go": {"agents"},
	"identity.go": {"identity"}, "notify.go": {"notify"}, "fleet.go": {"fleet"}, "budget.go": {"budget"},
	"worktree.go": {"worktrees"}, "watches.go": {"watches"}, "sandbox.go": {"sandbox"}, "monitor.go": {"monitor"},
	"persist.go": {"nodes"}, "policy.go": {"nodes"}, "policy_ops.go": {"nodes"}, "quotas.go": {"nodes"},
}

// wiringFiles may hold the concrete engine.
var wiringFiles = map[string]bool{"server.go": true, "serve.go": true}

// Each domain file reaches the engine only through its own small
// interface, so what a domain needs of the engine is written in one
// place (engine.go) and the handlers do not bind to *Orchestrator.
func TestDomainsUseTheirEngine(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "engine.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			// s.o, c.s.o: the concrete engine.
			if sel.Sel.Name == "o" && isServer(sel.X) && !wiringFiles[name] {
				t.Errorf("%s: uses the concrete engine (%s.o); use its view in engine.go (s.eng.…)", fset.Position(sel.Pos()), exprString(sel.X))
			}
			// s.eng.X: a domain's view.
			if inner, ok := sel.X.(*ast.SelectorExpr); ok && inner.Sel.Name == "eng" && isServer(inner.X) {
				if !wiringFiles[name] && !slices.Contains(domainEngines[name], sel.Sel.Name) {
					t.Errorf("%s: uses s.eng.%s; this file may use %v (domainEngines in engine_test.go)", fset.Position(sel.Pos()), sel.Sel.Name, domainEngines[name])
				}
			}
			return true
		})
	}
}

// isServer reports whether x reads like the server: s, c.s, x.s.
func isServer(x ast.Expr) bool {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name == "s"
	case *ast.SelectorExpr:
		return x.Sel.Name == "s"
	}
	return false
}

func exprString(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	}
	return "?"
}
