package orchestrator

import (
	"strings"
	"testing"
)

func TestNotifyText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"build asks: Bash: make #1", "build asks: Bash: make ##1"},
		{"two\nlines\tand\x1b[31m escape", "two lines and^[[31m escape"},
		{"osc\x1b]52;c;eA==\a \u009b2K \u202eevil", "osc^[]52;c;eA==^G ^[[2K \\u{202E}evil"},
		{"#{pane_id} #(rm -rf /)", "##{pane_id} ##(rm -rf /)"},
		{"   ", ""},
		{strings.Repeat("é", 300), strings.Repeat("é", maxNotifyRunes-1) + "…"},
	}
	for _, c := range cases {
		if got := notifyText(c.in); got != c.want {
			t.Errorf("notifyText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
