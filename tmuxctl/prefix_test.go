package tmuxctl

import (
	"os/exec"
	"reflect"
	"testing"
)

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"", "''"},
		{"attach-session", "attach-session"},
		{"=ts-a", "=ts-a"},
		{"/tmp/x y", "'/tmp/x y'"},
		{"#{pane_id} #{pane_width}", "'#{pane_id} #{pane_width}'"},
		{"it's", `'it'\''s'`},
		{"a;b", "'a;b'"},
		{"$HOME", "'$HOME'"},
		{"~", "'~'"},
	} {
		if got := ShellQuote(tc.in); got != tc.want {
			t.Errorf("ShellQuote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A quoted word comes back out of a real shell as the same word.
func TestShellQuoteRoundTrip(t *testing.T) {
	t.Parallel()
	words := []string{"", "plain", "two words", "it's", `back\slash`, "$HOME", "`x`", "a;b|c&d", "#{x}", "~user", "*", "tab\there", "nl\nhere", "é ü"}
	for _, w := range words {
		out, err := exec.Command("sh", "-c", "printf %s "+ShellQuote(w)).Output()
		if err != nil {
			t.Fatal(err)
		}
		if string(out) != w {
			t.Errorf("sh gave %q for %q (quoted %q)", out, w, ShellQuote(w))
		}
	}
}

func FuzzShellQuote(f *testing.F) {
	for _, s := range []string{"", "a b", "it's", "$(x)", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := ShellQuote(s)
		if len(q) < len(s) {
			t.Fatalf("quoted %q shorter than %q", q, s)
		}
		if q == s {
			for i := 0; i < len(s); i++ {
				if s[i] == '\'' || s[i] == ' ' || s[i] == '$' || s[i] == ';' {
					t.Fatalf("%q returned unquoted", s)
				}
			}
		}
	})
}

func TestConfigArgv(t *testing.T) {
	t.Parallel()
	cfg := Config{Tmux: "tmux", Socket: "s", ConfigFile: "/r/tmux.conf", Args: []string{"attach-session", "-t", "=ts a"}}
	want := []string{"tmux", "-L", "s", "-f", "/r/tmux.conf", "-C", "attach-session", "-t", "=ts a"}
	if got := cfg.Argv(); !reflect.DeepEqual(got, want) {
		t.Fatalf("local argv %q", got)
	}
	cfg.Prefix, cfg.ShellQuote = []string{"ssh", "-S", "/c", "h", "--"}, true
	want = []string{"ssh", "-S", "/c", "h", "--", "tmux", "-L", "s", "-f", "/r/tmux.conf", "-C", "attach-session", "-t", "'=ts a'"}
	if got := cfg.Argv(); !reflect.DeepEqual(got, want) {
		t.Fatalf("prefixed argv %q", got)
	}
}
