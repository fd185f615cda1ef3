package hosts

import "testing"

func TestParseDead(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		word   string
		exited bool
		code   int
	}{
		{"0::", false, 0}, {"1:7:", true, 7}, {"1:0:", true, 0}, {"1::9", true, 137}, {"1::", false, 0}, {"", false, 0}, {"1:x:", false, 0},
	} {
		if e, c := ParseDead(tt.word); e != tt.exited || c != tt.code {
			t.Errorf("ParseDead(%q) = %v %d, want %v %d", tt.word, e, c, tt.exited, tt.code)
		}
	}
}
