package node

import "testing"

func TestTextInInputBox(t *testing.T) {
	t.Parallel()
	rule := "────────────────────────────────────────"
	cases := []struct {
		name string
		rows []string
		text string
		want bool
	}{
		{"kept after a swallowed Enter (CI, 2.1.197)", []string{" ▐▛███▜▌   Claude Code v2.1.197", "", rule, "❯ say hello", rule, "  ? for shortcuts"}, "say hello", true},
		{"kept with a new line", []string{rule, "❯ please create /tmp/x/interactive", "", rule}, "please create /tmp/x/interactive", true},
		{"wrapped over two rows", []string{rule, "❯ please create /tmp/a-very-long-", "  path/interactive", rule}, "please create /tmp/a-very-long-path/interactive", true},
		{"taken: the box is empty, the text is in the transcript", []string{"> say hello", "", "✻ Thinking… (esc to interrupt)", rule, "❯ ", rule}, "say hello", false},
		{"another text in the box", []string{rule, "❯ say goodbye", rule}, "say hello", false},
		{"no box", []string{"$ say hello", ""}, "say hello", false},
		{"one rule only", []string{rule, "❯ say hello"}, "say hello", false},
		{"empty text", []string{rule, "❯ ", rule}, "  ", false},
	}
	for _, c := range cases {
		if got := textInInputBox(c.rows, c.text); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
