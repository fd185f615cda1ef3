package hosts

import (
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// What ssh printed → what the user is told (real ssh's words, as seen in
// TestRemoteBadHosts, plus cases the namespace cannot produce).
func TestSSHErrorTable(t *testing.T) {
	t.Parallel()
	spec := tools.HostSpec{Name: "big", Dest: "me@big"}
	for _, tc := range []struct {
		stderr, reason string
		words          []string
	}{
		{"ssh: connect to host 10.0.0.2 port 22: Connection refused\r\n", "refused", []string{"host big (me@big) refused", "sshd running"}},
		{"@@@@@@@\r\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\r\nHost key verification failed.\r\n", "host-key", []string{"ssh-keygen -R", "ssh me@big true"}},
		{"No ED25519 host key is known for big and you have requested strict checking.\r\nHost key verification failed.\r\n", "host-key", []string{"host key"}},
		{"me@big: Permission denied (publickey,password).\r\n", "auth", []string{"BatchMode=yes", "ssh-copy-id me@big", "ssh-add"}},
		{"ssh: Could not resolve hostname big: Name or service not known\r\n", "resolve", []string{"cannot be resolved"}},
		{"ssh: connect to host big port 22: Connection timed out\r\n", "timeout", []string{"timed out"}},
		{"kex_exchange_identification: read: Connection reset by peer\r\n", "ssh", []string{"ssh failed", "ssh -o BatchMode=yes me@big true"}},
		{"", "ssh", []string{"nothing"}},
	} {
		e := sshError(spec, tc.stderr, nil)
		if e.Reason != tc.reason || e.Host != "big" {
			t.Errorf("%q: reason %q, want %q", tc.stderr, e.Reason, tc.reason)
		}
		for _, w := range tc.words {
			if !strings.Contains(e.Msg, w) {
				t.Errorf("%q: message lacks %q: %s", tc.stderr, w, e.Msg)
			}
		}
	}
}

func TestClipLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("warning line ", 60) + "Host key verification failed."
	got := clipLine(long)
	if len(got) > 410 || !strings.HasPrefix(got, "… ") || !strings.HasSuffix(got, "Host key verification failed.") || strings.Contains(got, "\n") {
		t.Fatalf("clipLine: %q", got)
	}
	if clipLine("a\r\n  b\n") != "a b" {
		t.Fatalf("clipLine folds white space: %q", clipLine("a\r\n  b\n"))
	}
}

// The probe's output comes from the other machine: parsing any bytes never
// panics, and a well-formed answer is read field by field.
func FuzzProbeOutput(f *testing.F) {
	f.Add("home=/root\nshell=/bin/bash\npath=/usr/bin\ntmux=/usr/bin/tmux\ntmuxv=tmux 3.3a\nrdir=/root/x\nserver=up\n")
	f.Add("rdirerr=/x\n")
	f.Add("=\n==\nhome\n")
	f.Fuzz(func(t *testing.T, s string) {
		p, _ := parseProbe("big", "me@big", s)
		if strings.Contains(s, "\nrdir=/r\n") && p.Rdir == "" && !strings.Contains(s, "rdirerr=") {
			t.Fatalf("rdir lost from %q", s)
		}
	})
}

func TestParseProbe(t *testing.T) {
	t.Parallel()
	p, err := parseProbe("big", "me@big", "home=/root\nshell=/bin/bash\npath=/usr/bin:/bin\nctl=/opt/termsprawlctl\ntmux=/usr/bin/tmux\ntmuxv=tmux 3.3a\nserver=up\nrdir=/root/.local/state/termsprawl/remote/x\n")
	if err != nil || p.Home != "/root" || p.Shell != "/bin/bash" || p.Tmux != "/usr/bin/tmux" || p.TmuxVersion != "tmux 3.3a" ||
		p.Ctl != "/opt/termsprawlctl" || !p.ServerUp || p.Rdir != "/root/.local/state/termsprawl/remote/x" || p.Path != "/usr/bin:/bin" {
		t.Fatalf("parse: %+v %v", p, err)
	}
	for out, reason := range map[string]string{
		"home=/root\npath=/nonexistent\n":              "no-tmux",
		"home=/root\ntmux=/usr/bin/tmux\nrdirerr=/x\n": "remote-dir",
		"home=\ntmux=/usr/bin/tmux\n":                  "ssh",
	} {
		_, err := parseProbe("big", "me@big", out)
		he, ok := err.(*Error)
		if !ok || he.Reason != reason || !strings.Contains(he.Msg, "host big") {
			t.Errorf("%q: %v, want reason %s", out, err, reason)
		}
	}
}
