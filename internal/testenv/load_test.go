package testenv

import "testing"

func TestIdle(t *testing.T) {
	cases := []struct {
		cores int
		load  float64
		most  int
		want  int
	}{
		{2, 0.1, 2, 2},  // a quiet machine: every core
		{2, 1.5, 2, 1},  // one core busy
		{2, 2.0, 2, 0},  // both busy
		{2, 13.0, 2, 0}, // a full suite
		{8, 0.0, 2, 2},  // at most most
	}
	for _, c := range cases {
		if got := idle(c.cores, c.load, c.most); got != c.want {
			t.Errorf("idle(%d cores, load %.1f, most %d) = %d, want %d", c.cores, c.load, c.most, got, c.want)
		}
	}
	if n := IdleCores(2); n < 0 || n > 2 {
		t.Errorf("IdleCores(2) = %d", n)
	}
}
