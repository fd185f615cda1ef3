package orchestrator

import (
	"strings"
	"testing"
)

func TestNotifyText(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want string }{
		{"build asks: Bash: make #1", "build asks: Bash: make ##1"},
		{"two\nlines\tand\x1b[31m escape", "two lines and [31m escape"},
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
