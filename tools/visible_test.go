package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, line, text string }{
		{"plain name", "plain name", "plain name"},
		{"x\x1b]52;c;eA==\x07", "x^[]52;c;eA==^G", "x^[]52;c;eA==^G"},
		{"ls\x1b[2K\x1b[1A", "ls^[[2K^[[1A", "ls^[[2K^[[1A"},
		{"a\nb\tc", "a^Jb^Ic", "a\nb\tc"},
		{"over\rwrite", "over^Mwrite", "over^Mwrite"},
		{"del\x7f", "del^?", "del^?"},
		{"c1\u009b31m", "c1^[[31m", "c1^[[31m"},
		{"osc\u009d0;t\u009c", "osc^[]0;t^[\\", "osc^[]0;t^[\\"},
		{"bad\xffutf8", `bad\xffutf8`, `bad\xffutf8`},
		{"rm -rf ~ \u202e#txt.exe", `rm -rf ~ \u{202E}#txt.exe`, `rm -rf ~ \u{202E}#txt.exe`},
		{"zw\u200bj", `zw\u{200B}j`, `zw\u{200B}j`},
		{"ünïcødé ⎇ 日本", "ünïcødé ⎇ 日本", "ünïcødé ⎇ 日本"},
		{"", "", ""},
	} {
		if got := VisibleLine(tc.in); got != tc.line {
			t.Errorf("VisibleLine(%q) = %q, want %q", tc.in, got, tc.line)
		}
		if got := VisibleText(tc.in); got != tc.text {
			t.Errorf("VisibleText(%q) = %q, want %q", tc.in, got, tc.text)
		}
	}
}

// FuzzVisible: whatever comes in, what goes out is valid UTF-8 with no
// control a terminal would act on (VisibleText keeps only \n and \t).
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"x\x1b]52;c;eA==\x07", "\u009b2J", "\xff\xfe", "a\r\nb", "\u202e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{VisibleLine(s), VisibleText(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("not UTF-8: %q", out)
			}
			for _, r := range out {
				if r == '\n' || r == '\t' {
					continue
				}
				if hiddenRune(r) {
					t.Fatalf("%q: control %U left in %q", s, r, out)
				}
			}
		}
		if l := VisibleLine(s); strings.ContainsAny(l, "\n\t") {
			t.Fatalf("VisibleLine kept a newline or tab: %q", l)
		}
		if !NeedsVisible(s) && VisibleLine(s) != s {
			t.Fatalf("changed a string that needed nothing: %q", s)
		}
	})
}
