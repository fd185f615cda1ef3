package cli

import (
	"strings"
	"testing"
)

// call OP --help is recognised wherever the flag stands after call, past
// the global flags' values; anything else is left to the hot path and
// kong.
func TestCallOpHelp(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		op   string
		ok   bool
	}{
		{[]string{"call", "terminal_list", "--help"}, "terminal_list", true},
		{[]string{"call", "terminal_list", "-h"}, "terminal_list", true},
		{[]string{"--session", "/x/s.json", "call", "dialog_request", "--help"}, "dialog_request", true},
		{[]string{"call", "--help", "terminal_list"}, "terminal_list", true},
		{[]string{"--wait", "2s", "call", "terminal_list", "{}", "--help"}, "terminal_list", true},
		{[]string{"call", "--help"}, "", false},
		{[]string{"--help", "call", "terminal_list"}, "", false},
		{[]string{"call", "terminal_list"}, "", false},
		{[]string{"doctor", "--help"}, "", false},
		{[]string{"call", "terminal_submit", "--", "--help"}, "", false},
	} {
		op, ok := callOpHelp(c.args)
		if op != c.op || ok != c.ok {
			t.Errorf("callOpHelp(%q) = %q, %v; want %q, %v", c.args, op, ok, c.op, c.ok)
		}
	}
	code, out, errb := runCtl(t, "call", "terminal_press", "--help")
	if code != ExitOK || !strings.Contains(out, "keys (a string, required)") || !strings.Contains(out, `termsprawlctl call terminal_press '{"keys":"C-c","terminal":"build"}'`) || errb != "" {
		t.Errorf("call terminal_press --help: exit %d\n%s%s", code, out, errb)
	}
	code, _, errb = runCtl(t, "call", "terminal_lst", "--help")
	if code != ExitUsage || !strings.Contains(errb, "did you mean terminal_list?") {
		t.Errorf("call terminal_lst --help: exit %d\n%s", code, errb)
	}
}
