package tmuxctl

import (
	"errors"
	"testing"
)

func TestQuote(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "''"},
		{"plain", "plain"},
		{"-t", "-t"},
		{"=ts-a", "=ts-a"},
		{"%3", "'%3'"},
		{"%3:continue", "'%3:continue'"},
		{"a b", "'a b'"},
		{"a;b", "'a;b'"},
		{";", "';'"},
		{"it's", `'it'\''s'`},
		{`back\slash`, `'back\slash'`},
		{"$HOME", "'$HOME'"},
		{"~user", "'~user'"},
		{"#{pane_id}", "'#{pane_id}'"},
		{`"dq"`, `'"dq"'`},
		{"héllo", "'héllo'"},
		{"{", "'{'"},
		{"tab\there", `"tab\011here"`},
		{"a\nb$\"c\\", `"a\012b\$\"c\\"`},
	}
	for _, tt := range tests {
		if got := Quote(tt.in); got != tt.want {
			t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	got := Command("send-keys", "-t", "%1", "-l", "echo 'hi'; ls")
	want := `send-keys -t '%1' -l 'echo '\''hi'\''; ls'`
	if got != want {
		t.Fatalf("Command = %q, want %q", got, want)
	}
	if err := CheckCommand(got); err != nil {
		t.Fatalf("a line built by Command must pass CheckCommand: %v", err)
	}
}

func TestCheckCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		ok   bool
	}{
		{"display -p hi", true},
		{"", false},
		{"   \t ", false},
		{"# a comment", false},
		{"  # indented comment", false},
		{"display -p 'a\nb'", false},
		{"display -p a\rb", false},
		{"display -p a\x00b", false},
		{"display -p a ; display -p b", false},
		{"display -p a;b", false},
		{"display -p 'a;b'", true},
		{`display -p "a;b"`, true},
		{`display -p a\;b`, true},
		{`display -p "a\";b"`, true},
		{`display -p 'it'\''s;'`, true},
		{"display -p 'x'#notcomment", true},
	}
	for _, tt := range tests {
		err := CheckCommand(tt.line)
		if (err == nil) != tt.ok {
			t.Errorf("CheckCommand(%q) = %v, want ok=%v", tt.line, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrBadCommand) {
			t.Errorf("CheckCommand(%q) error %v does not wrap ErrBadCommand", tt.line, err)
		}
	}
}

// FuzzQuote: whatever the argument, the quoted command is one line that
// CheckCommand accepts (no raw newline, NUL or unquoted ';').
func FuzzQuote(f *testing.F) {
	f.Add("a;b 'c' \"d\" $e ~f #{g}\n\x00\\")
	f.Fuzz(func(t *testing.T, s string) {
		if err := CheckCommand(Command("set-buffer", "--", s)); err != nil {
			t.Fatalf("Command with %q: %v", s, err)
		}
	})
}
