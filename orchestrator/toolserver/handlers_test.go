package toolserver

import (
	"reflect"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// Every row of the operation table has exactly one handler of the right
// kind returning the row's value type, and every handler has a row.
func TestHandlersMatchTable(t *testing.T) {
	t.Parallel()
	hs := (&Server{}).buildHandlers()
	rows := map[string]bool{}
	for _, op := range tools.Operations() {
		rows[op.Name] = true
		h, ok := hs[op.Name]
		if !ok {
			t.Errorf("operation %s has no handler", op.Name)
			continue
		}
		if op.Mutation != (h.mutate != nil) || (h.read != nil) == (h.mutate != nil) {
			t.Errorf("operation %s: Mutation=%v but the handler is a %s", op.Name, op.Mutation, map[bool]string{true: "mutator", false: "reader"}[h.mutate != nil])
		}
		if want := reflect.TypeOf(op.Result); h.result != want {
			t.Errorf("operation %s: the table says its value is %v, the handler returns %v", op.Name, want, h.result)
		}
	}
	for name := range hs {
		if !rows[name] {
			t.Errorf("handler %s has no row in the operation table", name)
		}
	}
}

// Every mutation whose table row names a terminal gets args that embed
// terminalArg, so the drive rule applies to it.
func TestTerminalMutationsCheckTheDriveRule(t *testing.T) {
	t.Parallel()
	hs := (&Server{}).buildHandlers()
	for _, op := range tools.Operations() {
		if !op.Mutation || op.Param("terminal") == nil {
			continue
		}
		if !hs[op.Name].drives {
			t.Errorf("mutation %s names a terminal but its args do not embed terminalArg: the drive rule would not apply", op.Name)
		}
	}
}

// Every operation whose table row names a terminal or a node gets args
// that name it (namesNode), so resolve applies the realm rule to it: an
// agent kept to its host reads and drives nothing outside (realm.go).
func TestNodeArgsCheckTheRealm(t *testing.T) {
	t.Parallel()
	hs := (&Server{}).buildHandlers()
	for _, op := range tools.Operations() {
		if op.Param("terminal") == nil && op.Param("node") == nil {
			continue
		}
		if !hs[op.Name].names {
			t.Errorf("%s names a terminal or node but its args do not resolve it: the realm rule would not apply", op.Name)
		}
	}
}
