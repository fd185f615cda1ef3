// Package archtest holds the tests that enforce the import rules between
// termsprawl's packages (docs/DESIGN rules: tmuxctl uses the standard
// library only, tools never imports orchestrator, nothing imports cli)
// and keep docs/ARCHITECTURE.md true to the code: its rooms table against
// go list and those rules, its goroutines and locks tables against the
// go statements and mutex fields of orchestrator/..., tmuxctl and tools.
package archtest
