// Package archtest holds the test that enforces the import rules between
// termsprawl's packages (docs/DESIGN rules: tmuxctl uses the standard
// library only, tools never imports orchestrator, nothing imports cli).
package archtest
