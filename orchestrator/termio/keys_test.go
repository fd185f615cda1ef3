package termio

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
		err  string
	}{
		{"Enter", []string{"Enter"}, ""},
		{"Up Up Enter", []string{"Up", "Up", "Enter"}, ""},
		{"C-c", []string{"C-c"}, ""},
		{"C-C", []string{"C-c"}, ""},
		{"Control+C", []string{"C-c"}, ""},
		{"ctrl+c", []string{"C-c"}, ""},
		{"M-x", []string{"M-x"}, ""},
		{"Alt+x", []string{"M-x"}, ""},
		{"S-Tab", []string{"BTab"}, ""},
		{"Shift+Tab", []string{"BTab"}, ""},
		{"S-Up", []string{"S-Up"}, ""},
		{"C-M-Up", []string{"C-M-Up"}, ""},
		{"PageUp PageDown", []string{"PPage", "NPage"}, ""},
		{"PPage NPage", []string{"PPage", "NPage"}, ""},
		{"F1 F12 f5", []string{"F1", "F12", "F5"}, ""},
		{"Escape esc BSpace Backspace Tab", []string{"Escape", "Escape", "BSpace", "BSpace", "Tab"}, ""},
		{"Delete Insert Home End", []string{"DC", "IC", "Home", "End"}, ""},
		{"a", []string{"a"}, ""},
		{"-", []string{"-"}, ""},
		{"+", []string{"+"}, ""},
		{"C--", []string{"C--"}, ""},
		{"é", []string{"é"}, ""},
		{"", nil, "no keys"},
		{"Foo", nil, `unknown key "Foo"`},
		{"C-Bogus", nil, `unknown key "Bogus"`},
		{"F13", nil, `unknown key "F13"`},
		{"Enter Nope", nil, `unknown key "Nope"`},
	}
	for _, tt := range tests {
		got, err := ParseKeys(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseKeys(%q) error = %v, want one containing %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseKeys(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
