package worktree

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The attack of issue 34 item 3: a base branch tracks `cfg -> ~/.ssh`
// and the main worktree has an ignored cfg/authorized_keys that
// .worktreeinclude names. The copy is refused (said), ~/.ssh is
// untouched, and the rest is still copied.
func TestIncludeNeverFollowsALinkOut(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	home := os.Getenv("HOME")
	ssh := filepath.Join(home, ".ssh")
	write(t, filepath.Join(ssh, "authorized_keys"), "ssh-ed25519 AAAA the human's own key\n")
	sh(t, repo, "git", "checkout", "-qb", "evil")
	if err := os.Symlink(ssh, filepath.Join(repo, "cfg")); err != nil {
		t.Fatal(err)
	}
	sh(t, repo, "git", "add", "cfg")
	sh(t, repo, "git", "commit", "-qm", "a link out")
	sh(t, repo, "git", "checkout", "-q", "main")
	write(t, filepath.Join(repo, ".git", "info", "exclude"), "cfg/authorized_keys\n")
	write(t, filepath.Join(repo, "cfg", "authorized_keys"), "ssh-ed25519 AAAA the attacker's key\n")
	write(t, filepath.Join(repo, ".env"), "SECRET=1\n")
	write(t, filepath.Join(repo, ".worktreeinclude"), ".env\ncfg/authorized_keys\n")
	var g Git
	in, err := g.Create(ctx(t), Spec{Dir: repo, Name: "inc", Base: "evil"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.CopyIncluded(ctx(t), in, CopyLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ssh, "authorized_keys")); string(b) != "ssh-ed25519 AAAA the human's own key\n" {
		t.Fatalf("~/.ssh/authorized_keys was written: %q", b)
	}
	if strings.Join(res.Paths, ",") != ".env" || len(res.Skipped) != 1 || res.Skipped[0].Path != "cfg/authorized_keys" ||
		!strings.Contains(res.Skipped[0].Why, "leads out") {
		t.Fatalf("copied %q, skipped %+v", res.Paths, res.Skipped)
	}
	if notes := strings.Join(res.Notes(), "\n"); !strings.Contains(notes, "not copied from .worktreeinclude: cfg/authorized_keys") {
		t.Fatalf("the refusal is not said: %s", notes)
	}
}

// Copies are bounded per file and in total; a 2 GiB sparse file is
// skipped at once, and what is skipped is said.
func TestIncludeCopiesAreBounded(t *testing.T) {
	repo, same := newRepo(t, "r")
	defer same()
	big, err := os.Create(filepath.Join(repo, "big.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	big.Close()
	write(t, filepath.Join(repo, "a.log"), strings.Repeat("a", 80))
	write(t, filepath.Join(repo, "b.log"), strings.Repeat("b", 80))
	write(t, filepath.Join(repo, ".worktreeinclude"), "*.log\n")
	var g Git
	in, err := g.Create(ctx(t), Spec{Dir: repo, Name: "inc"})
	if err != nil {
		t.Fatal(err)
	}
	// Default bounds: the sparse file is over 64 MiB.
	res, err := g.CopyIncluded(ctx(t), in, CopyLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Paths, ",") != "a.log,b.log" || len(res.Skipped) != 1 || res.Skipped[0].Path != "big.log" || !strings.Contains(res.Skipped[0].Why, "copy_max_file") {
		t.Fatalf("copied %q, skipped %+v", res.Paths, res.Skipped)
	}
	if _, err := os.Lstat(filepath.Join(in.Path, "big.log")); err == nil {
		t.Fatal("big.log was copied")
	}
	// A total of 150 bytes: the second 80-byte file is over it.
	in2, err := g.Create(ctx(t), Spec{Dir: repo, Name: "inc2"})
	if err != nil {
		t.Fatal(err)
	}
	res, err = g.CopyIncluded(ctx(t), in2, CopyLimits{MaxFile: 100, MaxTotal: 150})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(res.Paths, ",") != "a.log" || len(res.Skipped) != 2 || !strings.Contains(res.Skipped[0].Why, "copy_max_total") {
		t.Fatalf("copied %q, skipped %+v", res.Paths, res.Skipped)
	}
}

// FIFOs, sockets and devices are skipped without being opened for long
// (a FIFO with no writer would block a plain open).
func TestIncludeSkipsFIFOs(t *testing.T) {
	t.Parallel()
	src, dst := t.TempDir(), t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	sr, _ := os.OpenRoot(src)
	defer sr.Close()
	dr, _ := os.OpenRoot(dst)
	defer dr.Close()
	n, why, err := copyIncluded(sr, dr, "pipe", DefaultCopyMaxFile, DefaultCopyMaxTotal)
	if err != nil || n != 0 || !strings.Contains(why, "FIFO") {
		t.Fatalf("%d %q %v", n, why, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "pipe")); err == nil {
		t.Fatal("the FIFO was made in the worktree")
	}
}
