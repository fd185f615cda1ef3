package tmuxenv

import (
	"slices"
	"testing"
)

func TestWithoutTmux(t *testing.T) {
	t.Parallel()
	in := []string{"A=1", "TMUX=/tmp/x,1,0", "TMUX_PANE=%3", "TMUXX=keep", "B=2"}
	got := WithoutTmux(in)
	if want := []string{"A=1", "TMUXX=keep", "B=2"}; !slices.Equal(got, want) {
		t.Fatalf("WithoutTmux = %q, want %q", got, want)
	}
	if len(in) != 5 {
		t.Fatal("the input was modified")
	}
}
