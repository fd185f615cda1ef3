package cli

import (
	"strings"
	"testing"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// The hot path and kong give the same exit code, stdout and stderr for
// every invocation the hot path takes, and the hot path declines the
// rest.
func TestFastCtlMatchesKong(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv(SessionEnv, fs.Agent)
	missing := fs.Dir + "/sessions/nope.json"
	taken := [][]string{
		{"doctor"},
		{"--session", fs.Operator, "doctor"},
		{"doctor", "--session=" + fs.Operator},
		{"call", "terminal_list"},
		{"call", "terminal_list", "{}"},
		{"call", "terminal_list", ""},
		{"--wait", "2s", "--retry", "1", "call", "session_info"},
		{"call", "session_info", "--retry=2", "--wait=1s"},
		{"call", "terminal_resize", `{"terminal":"a","columns":80.0,"rows":24}`},
		{"call", "nope"},
		{"call", "terminal_list", `{"bogus":1}`},
		{"call", "terminal_list", `{`},
		{"--session", missing, "call", "session_info"},
		{"--session", missing, "doctor"},
	}
	declined := [][]string{
		{}, {"doctor", "extra"}, {"call"}, {"call", "a", "b", "c"}, {"--help"}, {"call", "--help"},
		{"--wait", "-1s", "doctor"}, {"--retry", "x", "doctor"}, {"--wait"}, {"version"}, {"mcp"},
		{"-h", "doctor"}, {"--session"}, {"guide"},
	}
	run := func(fast bool, args []string) (int, string, string) {
		fastCtlEnabled = fast
		defer func() { fastCtlEnabled = true }()
		return runCtl(t, args...)
	}
	for _, args := range taken {
		if _, ok := parseFastCtl(args); !ok {
			t.Errorf("%q: the hot path declines it", args)
			continue
		}
		fc, fo, fe := run(true, args)
		kc, ko, ke := run(false, args)
		if fc != kc || fo != ko || fe != ke {
			t.Errorf("%q: hot path exit %d\n%s%s\nkong exit %d\n%s%s", args, fc, fo, fe, kc, ko, ke)
		}
	}
	if code, out, _ := run(true, []string{"doctor"}); code != ExitOK || !contains(out, `"ok": true`) {
		t.Errorf("doctor on the hot path: exit %d\n%s", code, out)
	}
	for _, args := range declined {
		if _, ok := parseFastCtl(args); ok {
			t.Errorf("%q: the hot path takes it; kong must", args)
		}
	}
	t.Setenv("COMP_LINE", "termsprawlctl call ")
	if _, ok := parseFastCtl([]string{"doctor"}); ok {
		t.Error("the hot path runs during shell completion")
	}
}
