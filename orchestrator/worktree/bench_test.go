package worktree

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkDiffBigRepository: 20,000 untracked files in the main
// worktree and 5,000 in the agent's; the diff answers within 10 s and
// says it cut its text (docs/PERFORMANCE.md).
func BenchmarkDiffBigRepository(b *testing.B) {
	repo, _ := benchRepo(b)
	in, err := Git{}.Create(b.Context(), Spec{Dir: repo, Name: "big"})
	if err != nil {
		b.Fatal(err)
	}
	many(b, repo, "main-untracked", 20000)
	many(b, in.Path, "agent-new", 5000)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		d, err := Git{}.DiffOf(b.Context(), in, 0)
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if took > 10*time.Second {
			b.Fatalf("diff took %s", took)
		}
		if d.Cut == "" || d.Files != 5000 {
			b.Fatalf("files %d cut %q", d.Files, d.Cut)
		}
		b.ReportMetric(float64(took.Milliseconds()), "ms/diff")
		b.ReportMetric(float64(len(d.Text)), "text-bytes")
	}
	b.StopTimer()
	start := time.Now()
	if _, err := (Git{}).StatusOf(b.Context(), in); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds()), "ms/status")
}

func benchRepo(b *testing.B) (string, string) {
	home := b.TempDir()
	b.Setenv("HOME", home)
	b.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = B\n\temail = b@example.com\n[init]\n\tdefaultBranch = main\n"), 0o644)
	repo := filepath.Join(b.TempDir(), "big")
	os.MkdirAll(repo, 0o755)
	run := func(args ...string) {
		if _, err := (Git{}).write(b.Context(), repo, args...); err != nil {
			b.Fatal(err)
		}
	}
	run("init", "-q")
	os.WriteFile(filepath.Join(repo, "README"), []byte("big\n"), 0o644)
	run("add", "README")
	run("commit", "-qm", "first")
	return repo, home
}

func many(b *testing.B, dir, prefix string, n int) {
	line := strings.Repeat("x", 60) + "\n"
	for i := range n {
		d := filepath.Join(dir, prefix, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%05d.txt", i)), []byte(strings.Repeat(line, 5)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
