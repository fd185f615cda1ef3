package notify

import (
	"strings"
	"testing"
)

func TestNotifyText(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"build asks: Bash: make #1", "build asks: Bash: make ##1"},
		{"two\nlines\tand\x1b[31m escape", "two lines and^[[31m escape"},
		{"osc\x1b]52;c;eA==\a \u009b2K \u202eevil", "osc^[]52;c;eA==^G ^[[2K \\u{202E}evil"},
		{"#{pane_id} #(rm -rf /)", "##{pane_id} ##(rm -rf /)"},
		{"   ", ""},
		{strings.Repeat("é", 300), strings.Repeat("é", (MaxStatusRunes-1)/3) + "…" + strings.Repeat("é", MaxStatusRunes-1-(MaxStatusRunes-1)/3)},
		{"n1 asks: Bash: ls " + strings.Repeat("x", 300) + "; rm -rf ~/work (C-b a answers here)", "n1 asks: Bash: ls " + strings.Repeat("x", (MaxStatusRunes-1)/3-18) + "…" + strings.Repeat("x", MaxStatusRunes-1-(MaxStatusRunes-1)/3-len("; rm -rf ~/work (C-b a answers here)")) + "; rm -rf ~/work (C-b a answers here)"},
	}
	for _, c := range cases {
		if got := StatusText(c.in); got != c.want {
			t.Errorf("StatusText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
