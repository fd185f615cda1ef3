package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// world is a home directory, a state directory and a repository with a
// linked worktree, as files only (no git needed for the argv).
type world struct {
	home, state, repo, wt, cache string
}

func newWorld(t *testing.T) world {
	t.Helper()
	root := t.TempDir()
	w := world{home: filepath.Join(root, "home"), state: filepath.Join(root, "state"), repo: filepath.Join(root, "repo"),
		wt: filepath.Join(root, "wt"), cache: filepath.Join(root, "state", "nodes", "n1.cache")}
	for _, d := range []string{w.home + "/.ssh", w.home + "/.claude", w.home + "/.cache", w.home + "/go/bin", w.state + "/sessions",
		w.repo + "/.git/objects", w.repo + "/.git/refs", w.repo + "/.git/hooks", w.repo + "/.git/worktrees/wt", w.wt} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{
		w.home + "/.netrc": "machine x", w.state + "/sessions/n1.json": "{}", w.state + "/sessions/operator.json": "{}",
		w.state + "/endpoint.json": "{}", w.repo + "/.git/config": "", w.wt + "/.git": "gitdir: " + w.repo + "/.git/worktrees/wt\n",
		w.repo + "/.git/worktrees/wt/commondir": "../..\n",
	} {
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w world) spec(p Profile) Spec {
	return Spec{Profile: p, Home: w.home, Dir: w.wt, Git: FindGit(w.wt), StateDir: w.state,
		Visible:  []string{w.state + "/sessions/n1.json", w.state + "/endpoint.json"},
		Keep:     []string{w.home + "/go/bin", "/usr/bin"},
		TmuxDirs: []string{"/nonexistent/tmux-0", w.home}, CacheDir: w.cache, UID: 1000, GID: 1000, Agent: "codex"}
}

// has reports whether the argv holds seq as consecutive words.
func has(a []string, seq ...string) bool {
	for i := 0; i+len(seq) <= len(a); i++ {
		if slices.Equal(a[i:i+len(seq)], seq) {
			return true
		}
	}
	return false
}

// pos is the index of seq in a (-1 if absent).
func pos(a []string, seq ...string) int {
	for i := 0; i+len(seq) <= len(a); i++ {
		if slices.Equal(a[i:i+len(seq)], seq) {
			return i
		}
	}
	return -1
}

func TestArgs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if err := Prepare(w.spec(Workspace)); err != nil {
		t.Fatal(err)
	}
	ws, err := Args(w.spec(Workspace))
	if err != nil {
		t.Fatal(err)
	}
	gd, err := Args(w.spec(Guard))
	if err != nil {
		t.Fatal(err)
	}
	git := w.repo + "/.git"
	for _, c := range []struct {
		name    string
		argv    []string
		want    [][]string
		notWant [][]string
		// before: each pair's first must come before its second.
		before [][2][]string
	}{
		{name: "workspace", argv: ws,
			want: [][]string{
				{"--unshare-user", "--uid", "1000", "--gid", "1000", "--unshare-pid", "--die-with-parent"},
				{"--ro-bind", "/", "/"}, {"--dev", "/dev"}, {"--proc", "/proc"}, {"--tmpfs", "/tmp"},
				{"--bind", w.wt, w.wt},
				{"--bind", w.home + "/.claude", w.home + "/.claude"},
				{"--bind", w.home + "/.codex", w.home + "/.codex"}, // made by Prepare for codex
				{"--bind", w.cache + "/.cache", w.home + "/.cache"},
				{"--bind", w.cache + "/go", w.home + "/go"},
				{"--ro-bind", w.home + "/go/bin", w.home + "/go/bin"}, // a PATH directory in a private cache
				{"--ro-bind", git, git},
				{"--bind", git + "/objects", git + "/objects"}, {"--bind", git + "/refs", git + "/refs"},
				{"--bind", git + "/worktrees/wt", git + "/worktrees/wt"},
				{"--ro-bind", git + "/config", git + "/config"}, {"--ro-bind", git + "/hooks", git + "/hooks"},
				{"--ro-bind", git + "/info", git + "/info"},
				{"--tmpfs", w.state}, {"--ro-bind", w.state + "/sessions/n1.json", w.state + "/sessions/n1.json"},
				{"--ro-bind", w.state + "/endpoint.json", w.state + "/endpoint.json"}, {"--remount-ro", w.state},
				{"--tmpfs", w.home + "/.ssh"}, {"--ro-bind", "/dev/null", w.home + "/.netrc"},
				{"--tmpfs", w.home}, // a tmux dir given that exists
			},
			notWant: [][]string{
				{"--ro-bind", w.state + "/sessions/operator.json", w.state + "/sessions/operator.json"},
				{"--tmpfs", "/nonexistent/tmux-0"}, {"--new-session"}, {"--tmpfs", w.home + "/.aws"},
				{"--bind", w.home + "/.gemini", w.home + "/.gemini"}, // another kind's, missing
			},
			before: [][2][]string{
				{{"--ro-bind", "/", "/"}, {"--bind", w.wt, w.wt}},
				{{"--bind", w.cache + "/go", w.home + "/go"}, {"--ro-bind", w.home + "/go/bin", w.home + "/go/bin"}},
				{{"--ro-bind", git, git}, {"--bind", git + "/objects", git + "/objects"}},
				{{"--bind", git + "/objects", git + "/objects"}, {"--ro-bind", git + "/hooks", git + "/hooks"}},
				{{"--tmpfs", w.state}, {"--ro-bind", w.state + "/endpoint.json", w.state + "/endpoint.json"}},
				{{"--bind", w.wt, w.wt}, {"--tmpfs", w.state}},
			}},
		{name: "guard", argv: gd,
			want: [][]string{
				{"--unshare-user", "--uid", "1000"}, {"--unshare-pid"}, {"--bind", "/", "/"}, {"--proc", "/proc"},
				{"--tmpfs", w.state}, {"--ro-bind", w.state + "/sessions/n1.json", w.state + "/sessions/n1.json"},
			},
			notWant: [][]string{
				{"--ro-bind", "/", "/"}, {"--tmpfs", "/tmp"}, {"--tmpfs", w.home + "/.ssh"},
				{"--bind", w.cache + "/.cache", w.home + "/.cache"},
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.argv[len(c.argv)-1] != "--" {
				t.Errorf("argv does not end with --: %q", c.argv)
			}
			for _, s := range c.want {
				if !has(c.argv, s...) {
					t.Errorf("argv lacks %q:\n%q", s, c.argv)
				}
			}
			for _, s := range c.notWant {
				if has(c.argv, s...) {
					t.Errorf("argv has %q:\n%q", s, c.argv)
				}
			}
			for _, b := range c.before {
				if i, j := pos(c.argv, b[0]...), pos(c.argv, b[1]...); i < 0 || j < 0 || i > j {
					t.Errorf("%q (at %d) must come before %q (at %d)", b[0], i, b[1], j)
				}
			}
		})
	}
}

func TestArgsSharedAndExtraCaches(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.spec(Workspace)
	shared := filepath.Join(t.TempDir(), "sccache")
	os.MkdirAll(shared, 0o755)
	os.MkdirAll(w.home+"/.m2", 0o755)
	s.SharedCaches = []string{"~/go", "~/.m2", shared}
	s.ExtraCaches = []string{"~/.cargo", "../escape", "/etc"}
	s.Hide = []string{"~/.netrc", "~/.claude"}
	if err := Prepare(s); err != nil {
		t.Fatal(err)
	}
	a, err := Args(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range [][]string{
		{"--bind", w.home + "/go", w.home + "/go"},
		{"--bind", w.cache + "/.cargo", w.home + "/.cargo"},
		{"--tmpfs", w.home + "/.claude"},
		{"--bind", w.home + "/.m2", w.home + "/.m2"},
		{"--bind", shared, shared},
	} {
		if !has(a, want...) {
			t.Errorf("argv lacks %q:\n%q", want, a)
		}
	}
	if has(a, "--bind", w.cache+"/go", w.home+"/go") {
		t.Errorf("a shared cache is still private: %q", a)
	}
	if strings.Contains(strings.Join(a, " "), "escape") {
		t.Errorf("a cache outside the home directory was taken: %q", a)
	}
	if _, err := os.Stat(filepath.Join(w.repo, ".git", "info")); err != nil {
		t.Errorf("Prepare did not make the repository's info/: %v", err)
	}
}

func TestArgsBad(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, c := range []struct {
		name string
		s    Spec
		want string
	}{
		{"unknown profile", Spec{Profile: "open", Dir: w.wt}, `unknown profile "open"`},
		{"relative dir", Spec{Profile: Workspace, Dir: "wt"}, "not an absolute path"},
		{"no dir", Spec{Profile: Guard}, "no directory"},
	} {
		if _, err := Args(c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.name, err, c.want)
		}
	}
	if a, err := Args(Spec{Profile: None, Dir: w.wt}); a != nil || err != nil {
		t.Errorf("none: %q %v, want no argv", a, err)
	}
}

func TestParseAndAtLeast(t *testing.T) {
	t.Parallel()
	for _, n := range Names() {
		if p, err := Parse(n); err != nil || string(p) != n {
			t.Errorf("Parse(%q) = %q, %v", n, p, err)
		}
	}
	if _, err := Parse("off"); err == nil || !strings.Contains(err.Error(), "use workspace, guard or none") {
		t.Errorf("Parse(off): %v", err)
	}
	for _, c := range []struct{ asked, floor, want Profile }{
		{None, Workspace, Workspace}, {Guard, Workspace, Workspace}, {Workspace, Guard, Workspace},
		{None, Guard, Guard}, {"", None, None}, {Workspace, None, Workspace}, {None, None, None}, {"", Guard, Guard},
	} {
		if got := AtLeast(c.asked, c.floor); got != c.want {
			t.Errorf("AtLeast(%q, %q) = %q, want %q", c.asked, c.floor, got, c.want)
		}
	}
	if None.Shown() != "unsandboxed" || Workspace.Shown() != "workspace" {
		t.Errorf("Shown: %q %q", None.Shown(), Workspace.Shown())
	}
}

func TestFindGit(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if g := FindGit(filepath.Join(w.repo)); g == nil || g.CommonDir != w.repo+"/.git" || g.Dir != g.CommonDir {
		t.Errorf("main worktree: %+v", g)
	}
	sub := filepath.Join(w.wt, "a", "b")
	os.MkdirAll(sub, 0o755)
	if g := FindGit(sub); g == nil || g.CommonDir != w.repo+"/.git" || g.Dir != w.repo+"/.git/worktrees/wt" {
		t.Errorf("linked worktree: %+v", g)
	}
	if g := FindGit(w.home); g != nil {
		t.Errorf("no repository: %+v", g)
	}
}

// Claude Code in workspace keeps its global configuration in a copy under
// ~/.claude (CLAUDE_CONFIG_DIR), refreshed when the human's is newer.
func TestClaudeConfigCopy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s := w.spec(Workspace)
	s.Agent = "claude"
	src, dst := w.home+"/.claude.json", w.home+"/.claude/.claude.json"
	os.WriteFile(src, []byte(`{"v":1}`), 0o600)
	if err := Prepare(s); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(dst); string(b) != `{"v":1}` {
		t.Fatalf("copy %q", b)
	}
	a, _ := Args(s)
	if !has(a, "--setenv", "CLAUDE_CONFIG_DIR", w.home+"/.claude") {
		t.Errorf("no CLAUDE_CONFIG_DIR: %q", a)
	}
	// The agent's own change stays while the human's file is older.
	os.WriteFile(dst, []byte(`{"v":"agent"}`), 0o600)
	Prepare(s)
	if b, _ := os.ReadFile(dst); string(b) != `{"v":"agent"}` {
		t.Fatalf("the agent's change was lost: %q", b)
	}
	// The human's later change wins.
	later := time.Now().Add(time.Minute)
	os.WriteFile(src, []byte(`{"v":2}`), 0o600)
	os.Chtimes(src, later, later)
	Prepare(s)
	if b, _ := os.ReadFile(dst); string(b) != `{"v":2}` {
		t.Fatalf("the human's newer file was not copied: %q", b)
	}
	s.OwnClaudeConfig = true
	if a, _ := Args(s); has(a, "CLAUDE_CONFIG_DIR") {
		t.Errorf("CLAUDE_CONFIG_DIR set over the launch's own: %q", a)
	}
	s.OwnClaudeConfig, s.Profile = false, Guard
	if a, _ := Args(s); has(a, "CLAUDE_CONFIG_DIR") {
		t.Errorf("CLAUDE_CONFIG_DIR in guard (its home is writable): %q", a)
	}
}
