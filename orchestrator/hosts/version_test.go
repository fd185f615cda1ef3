package hosts

import (
	"strings"
	"testing"
)

func TestTmuxVersion(t *testing.T) {
	t.Parallel()
	for v, want := range map[string][3]int{ // major, minor, ok
		"tmux 3.3a":      {3, 3, 1},
		"tmux 3.2":       {3, 2, 1},
		"tmux 3.1c\n":    {3, 1, 1},
		"tmux next-3.4":  {3, 4, 1},
		"tmux 2.9a":      {2, 9, 1},
		"tmux master":    {0, 0, 0},
		"":               {0, 0, 0},
		"something else": {0, 0, 0},
	} {
		ma, mi, ok := TmuxVersion(v)
		if ma != want[0] || mi != want[1] || ok != (want[2] == 1) {
			t.Errorf("TmuxVersion(%q) = %d %d %v, want %v", v, ma, mi, ok, want)
		}
	}
	// The probe's output of an old tmux is refused naming it.
	_, err := parseProbe("big", "me@big", "home=/root\npath=/usr/bin\ntmux=/usr/bin/tmux\ntmuxv=tmux 3.1c\n")
	if e, ok := err.(*Error); !ok || e.Reason != "old-tmux" || !strings.Contains(e.Msg, "tmux 3.1c") || !strings.Contains(e.Msg, "3.2 or newer") {
		t.Fatalf("old tmux: %v", err)
	}
	if _, err := parseProbe("big", "me@big", "home=/root\ntmux=/usr/bin/tmux\ntmuxv=tmux 3.2a\nrdir=/root/x\n"); err != nil {
		t.Fatalf("tmux 3.2a: %v", err)
	}
}

func TestStatusShown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		st   Status
		want string
	}{
		{Status{State: StateConnected}, StateConnected},
		{Status{State: StateConnected, Attempting: true}, StateConnected},
		{Status{State: StateUnreachable}, StateUnreachable},
		{Status{State: StateUnreachable, Attempting: true}, StateReconnecting},
		{Status{State: StateConnecting}, StateReconnecting},
	} {
		if got := tc.st.Shown(); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.st, got, tc.want)
		}
	}
}
