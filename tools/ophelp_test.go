package tools

import (
	"slices"
	"strings"
	"testing"
)

// Every operation's generated example passes its own schema and rules,
// and its help names every argument with its type and whether it is
// required (CONTRACT §18: call OP --help).
func TestOperationUsage(t *testing.T) {
	t.Parallel()
	for _, op := range Operations() {
		ex := OperationExample(op)
		if err := op.Validate([]byte(ex)); err != nil {
			t.Errorf("%s: the example %s is refused: %v", op.Name, ex, err)
		}
		help := OperationUsage(op)
		if !strings.Contains(help, "termsprawlctl call "+op.Name+" '"+ex+"'") {
			t.Errorf("%s: help has no example:\n%s", op.Name, help)
		}
		for _, p := range op.Params {
			req := "optional"
			if p.Required {
				req = "required"
			}
			if !strings.Contains(help, "  "+p.Name+" ("+p.typeText()+", "+req) {
				t.Errorf("%s: help does not describe %s:\n%s", op.Name, p.Name, help)
			}
		}
	}
	op, _ := Lookup("terminal_wait_for")
	help := OperationUsage(op)
	for _, want := range []string{"wait (one of text, regex, quiet, exit, render, semantic, required)", "timeout_ms (an integer from 0 to 40000, optional, default 30000)"} {
		if !strings.Contains(help, want) {
			t.Errorf("terminal_wait_for help lacks %q:\n%s", want, help)
		}
	}
	op, _ = Lookup("dialog_request")
	if ex := OperationExample(op); !strings.Contains(ex, `"kind":"permission"`) || !strings.Contains(ex, `"title"`) {
		t.Errorf("dialog_request example: %s", ex)
	}
}

func TestSuggest(t *testing.T) {
	t.Parallel()
	cands := []string{"build", "build-2", "tests", "web"}
	for word, want := range map[string]string{"buidl": "build", "tset": "tests", "wbe": "web", "xyzzy": "", "build": "build-2"} {
		got := strings.Join(Suggest(word, cands, false), ",")
		if got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
	for name, want := range map[string]string{"terminal_snap": "terminal_snapshot", "terminal_lst": "terminal_list", "dialog_answr": "dialog_answer", "bogus": ""} {
		if got := strings.Join(SuggestOperation(name), ","); got != want {
			t.Errorf("SuggestOperation(%q) = %q, want %q", name, got, want)
		}
	}
	if e := UnknownOperationError("terminal_snap"); !strings.Contains(e.Error(), `unknown operation "terminal_snap" (did you mean terminal_snapshot?)`) {
		t.Errorf("UnknownOperationError: %v", e)
	}
}

func TestParseKeysUnknownListsValid(t *testing.T) {
	t.Parallel()
	_, err := ParseKeys("Entr")
	if err == nil || !strings.Contains(err.Error(), `unknown key "Entr"`) || !strings.Contains(err.Error(), "(did you mean Enter?)") || !strings.Contains(err.Error(), "Escape") || !strings.Contains(err.Error(), "F12") {
		t.Errorf("ParseKeys(Entr): %v", err)
	}
}

func TestKeyNamesCoverTable(t *testing.T) {
	t.Parallel()
	names := KeyNames()
	for k := range tmuxKeys {
		if !slices.Contains(names, k) && !(strings.HasPrefix(k, "KP") && k != "KPEnter") {
			t.Errorf("KeyNames lacks %s", k)
		}
	}
}
