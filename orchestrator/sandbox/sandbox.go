// Package sandbox turns a profile into a bubblewrap (bwrap) command line
// (CONTRACT §27). It knows nothing of nodes: the engine hands it the
// paths of one program's world (its directory, its repository, the state
// directory's files it may see, the tmux socket directories, the caches)
// and puts the argv it returns in front of the program.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Profile is how much a sandbox confines its program.
type Profile string

// The profiles, strictest first.
const (
	// Workspace: a read-only root with the program's directory, its
	// agent's own configuration, private caches and a private /tmp
	// writable; secrets, termsprawl's state and tmux sockets hidden; its
	// own PID namespace.
	Workspace Profile = "workspace"
	// Guard: only termsprawl's part (state directory, tmux sockets, PID
	// namespace); the rest of the file system stays writable.
	Guard Profile = "guard"
	// None: no sandbox (shown as "unsandboxed").
	None Profile = "none"
)

// Names are the profiles as the CLI and the operation table spell them.
func Names() []string { return []string{string(Workspace), string(Guard), string(None)} }

// Parse reads a profile's name.
func Parse(s string) (Profile, error) {
	switch p := Profile(s); p {
	case Workspace, Guard, None:
		return p, nil
	}
	return "", fmt.Errorf("sandbox %q: use workspace, guard or none", s)
}

// strictness orders the profiles: none < guard < workspace. An unknown
// or empty profile counts as none.
func (p Profile) strictness() int {
	switch p {
	case Workspace:
		return 2
	case Guard:
		return 1
	}
	return 0
}

// AtLeast is the stricter of asked and floor: what a node launched by a
// sandboxed program runs under, whatever it asked for.
func AtLeast(asked, floor Profile) Profile {
	if floor.strictness() > asked.strictness() {
		return floor
	}
	if asked == "" {
		return None
	}
	return asked
}

// Shown is the profile as a human surface shows it: "unsandboxed" for
// none.
func (p Profile) Shown() string {
	if p.strictness() == 0 {
		return "unsandboxed"
	}
	return string(p)
}

// AgentDirs are the agents' own configuration and cache paths under the
// home directory, writable inside workspace (Claude Code, Codex, Gemini
// CLI, OpenCode).
var AgentDirs = []string{".claude", ".claude.json", ".codex", ".gemini", ".config/opencode", ".local/share/opencode", ".local/state/opencode"}

// agentDirsOf are the directories Prepare makes for an agent kind when
// they are missing (the home directory is read-only inside, so a first
// run could not make them); other kinds' directories are bound only when
// they exist.
var agentDirsOf = map[string][]string{
	"claude": {".claude"}, "codex": {".codex"}, "gemini": {".gemini"},
	// OpenCode 1.18.33 also makes ~/.local/state/opencode at start (it
	// exits with EROFS without it).
	"opencode": {".config/opencode", ".local/share/opencode", ".local/state/opencode"},
}

// Caches are the package and build caches under the home directory that
// workspace keeps private to the node (config.toml names more).
var Caches = []string{".cache", "go", ".npm"}

// Secrets are the paths under the home directory workspace hides.
var Secrets = []string{".ssh", ".aws", ".gnupg", ".config/gh", ".netrc", ".docker"}

// RootMappedID is the uid and gid a sandbox runs as inside when its
// caller is root: root inside keeps no capabilities (it could unmount
// the hiding mounts) and a nested bubblewrap still starts.
const RootMappedID = 1000

// Git is the repository of a program's directory.
type Git struct {
	// CommonDir is the repository's shared git directory (its objects,
	// refs, config, hooks, info).
	CommonDir string
	// Dir is the worktree's own git directory (CommonDir for the main
	// worktree; CommonDir/worktrees/NAME for a linked one).
	Dir string
}

// Spec is one program's sandbox.
type Spec struct {
	Profile Profile
	// Home is the user's home directory.
	Home string
	// Dir is the program's directory (a node's cwd or worktree): writable.
	Dir string
	// Git is Dir's repository, if any (FindGit).
	Git *Git
	// StateDir is termsprawl's state directory: hidden but for Visible.
	StateDir string
	// Visible are files of the state directory the program sees,
	// read-only (its own session file, the endpoint file, its agent's
	// wiring).
	Visible []string
	// TmuxDirs are the tmux socket directories to hide.
	TmuxDirs []string
	// Hide are more paths to hide (workspace; absolute, or ~/ for the
	// home directory).
	Hide []string
	// Keep are paths the program needs that may lie under /tmp or in a
	// private cache (its PATH directories, such as ~/go/bin; the home
	// directory): bound back read-only over the private /tmp and caches
	// (workspace).
	Keep []string
	// ExtraCaches are cache directories under Home besides Caches
	// (config.toml).
	ExtraCaches []string
	// SharedCaches names the caches that stay the user's own instead of
	// private to the program, writable: a name of Caches ("go", "~/go")
	// or another directory (absolute, or ~/ under the home directory).
	SharedCaches []string
	// Agent is the agent kind (claude, codex, gemini, opencode; "" for
	// none): Prepare makes its own directories.
	Agent string
	// OwnClaudeConfig: the launch sets CLAUDE_CONFIG_DIR itself, so
	// workspace leaves Claude Code's configuration where it says.
	OwnClaudeConfig bool
	// CacheDir holds the program's private caches (one directory per
	// cache, made by Prepare).
	CacheDir string
	// UID and GID are the ids inside (the caller's, RootMappedID for root).
	UID, GID int
	// Kind, if set, says what a path is on the machine the sandbox runs
	// on ('d' a directory, 'f' another file, 0 missing): a host's probe.
	// nil: this machine's file system.
	Kind func(path string) byte
}

func (s Spec) kind(p string) byte {
	if s.Kind != nil {
		return s.Kind(p)
	}
	return kind(p)
}

// InsideIDs are the uid and gid a sandbox of this process runs as.
func InsideIDs() (uid, gid int) {
	uid, gid = os.Getuid(), os.Getgid()
	if uid == 0 {
		uid = RootMappedID
	}
	if gid == 0 {
		gid = RootMappedID
	}
	return uid, gid
}

// caches are the spec's cache names: Caches then ExtraCaches, cleaned,
// each once.
func (s Spec) caches() []string {
	var out []string
	for _, c := range append(slices.Clone(Caches), s.ExtraCaches...) {
		c = strings.TrimPrefix(c, "~/")
		if filepath.IsAbs(c) && s.Home != "" {
			if rel, err := filepath.Rel(s.Home, c); err == nil && !strings.HasPrefix(rel, "..") {
				c = rel
			}
		}
		c = filepath.Clean(c)
		if c == "." || filepath.IsAbs(c) || strings.HasPrefix(c, "..") || slices.Contains(out, c) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// sharedPath is a shared cache's absolute path.
func (s Spec) sharedPath(n string) string {
	if r, ok := strings.CutPrefix(n, "~/"); ok || !filepath.IsAbs(n) {
		return filepath.Clean(s.home(r))
	}
	return filepath.Clean(n)
}

func (s Spec) shared(c string) bool {
	for _, n := range s.SharedCaches {
		if !strings.HasPrefix(n, "~/") && !filepath.IsAbs(n) {
			n = "~/" + n
		}
		if s.sharedPath(n) == s.home(c) {
			return true
		}
	}
	return false
}

func (s Spec) home(rel string) string { return filepath.Join(s.Home, rel) }

// Prepare makes what the sandbox's mounts need and may be missing: the
// private cache directories, the mount points of the caches and of the
// agent's own directories in the home directory, and the repository's
// hooks/ and info/ (so they can be kept read-only).
func Prepare(s Spec) error {
	if s.Profile != Workspace {
		return nil
	}
	var dirs []string
	for _, c := range s.caches() {
		dirs = append(dirs, s.home(c))
		if !s.shared(c) {
			dirs = append(dirs, filepath.Join(s.CacheDir, c))
		}
	}
	for _, d := range agentDirsOf[s.Agent] {
		dirs = append(dirs, s.home(d))
	}
	if s.Git != nil {
		dirs = append(dirs, filepath.Join(s.Git.CommonDir, "hooks"), filepath.Join(s.Git.CommonDir, "info"))
	}
	for _, d := range dirs {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("sandbox: make %s: %w", d, err)
		}
	}
	if s.claudeConfig() {
		return syncClaudeConfig(s.home(".claude.json"), s.home(claudeConfigCopy))
	}
	return nil
}

// claudeConfigCopy is where Claude Code keeps its global configuration
// inside workspace: it writes ~/.claude.json by a temporary file in the
// home directory and a rename, which a read-only home refuses (measured
// with 2.1.332), so inside it runs with CLAUDE_CONFIG_DIR=~/.claude and
// finds its file there.
const claudeConfigCopy = ".claude/.claude.json"

func (s Spec) claudeConfig() bool {
	return s.Profile == Workspace && s.Agent == "claude" && !s.OwnClaudeConfig && s.Home != ""
}

// syncClaudeConfig copies the human's ~/.claude.json to the sandbox's
// copy when the copy is missing or older (the human's changes win; the
// sandboxed agents' own changes stay in the copy until then).
func syncClaudeConfig(src, dst string) error {
	si, err := os.Stat(src)
	if err != nil || !si.Mode().IsRegular() {
		return nil // nothing to start from: Claude Code makes its own
	}
	if di, err := os.Stat(dst); err == nil && !di.ModTime().Before(si.ModTime()) {
		return nil
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("sandbox: read %s: %w", src, err)
	}
	tmp := dst + ".termsprawl-tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("sandbox: copy %s: %w", src, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("sandbox: copy %s: %w", src, err)
	}
	return nil
}

// kind of a path: 0 missing, 'd' a directory, 'f' anything else.
func kind(p string) byte {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return 0
	case fi.IsDir():
		return 'd'
	}
	return 'f'
}

// under reports whether p is dir or beneath it.
func under(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// Args is the bwrap argv (without the program) of s: the program to run
// follows it. None has no argv.
func Args(s Spec) ([]string, error) {
	if s.Profile == None || s.Profile == "" {
		return nil, nil
	}
	if s.Profile != Workspace && s.Profile != Guard {
		return nil, fmt.Errorf("sandbox: unknown profile %q", s.Profile)
	}
	for _, p := range []string{s.Home, s.Dir, s.StateDir} {
		if p != "" && !filepath.IsAbs(p) {
			return nil, fmt.Errorf("sandbox: %q is not an absolute path", p)
		}
	}
	if s.Dir == "" {
		return nil, errors.New("sandbox: no directory for the program")
	}
	a := []string{
		"--unshare-user", "--uid", fmt.Sprint(s.UID), "--gid", fmt.Sprint(s.GID),
		"--unshare-pid", "--die-with-parent",
	}
	bind := func(flag, p string) {
		if s.kind(p) != 0 {
			a = append(a, flag, p, p)
		}
	}
	// hide covers a directory with an empty tmpfs and a file with
	// /dev/null.
	hide := func(p string) {
		switch s.kind(p) {
		case 'd':
			a = append(a, "--tmpfs", p)
		case 'f':
			a = append(a, "--ro-bind", "/dev/null", p)
		}
	}
	if s.Profile == Workspace {
		a = append(a, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--setenv", "TMPDIR", "/tmp")
		if s.claudeConfig() {
			a = append(a, "--setenv", "CLAUDE_CONFIG_DIR", s.home(".claude"))
		}
		inCache := func(p string) bool {
			for _, c := range s.caches() {
				if !s.shared(c) && under(p, s.home(c)) && p != s.home(c) {
					return true
				}
			}
			return false
		}
		for _, p := range s.Keep {
			if filepath.IsAbs(p) && under(p, "/tmp") && !inCache(p) {
				bind("--ro-bind", p)
			}
		}
		bind("--bind", s.Dir)
		for _, d := range AgentDirs {
			bind("--bind", s.home(d))
		}
		for _, c := range s.caches() {
			switch {
			case s.shared(c):
				bind("--bind", s.home(c))
			case s.kind(s.home(c)) == 'd' && s.kind(filepath.Join(s.CacheDir, c)) == 'd':
				a = append(a, "--bind", filepath.Join(s.CacheDir, c), s.home(c))
			default:
				// No mount point (Prepare was not run): read-only, as
				// the rest of the home directory.
			}
		}
		// Programs the node runs from a private cache's directory (its
		// PATH: ~/go/bin) stay there, read-only.
		for _, p := range s.Keep {
			if filepath.IsAbs(p) && inCache(p) {
				bind("--ro-bind", p)
			}
		}
		for _, n := range s.SharedCaches {
			if filepath.IsAbs(n) || strings.HasPrefix(n, "~/") {
				if p := s.sharedPath(n); !slices.Contains(a, p) {
					bind("--bind", p)
				}
			}
		}
		if g := s.Git; g != nil {
			// Commits write objects, refs, their logs and the
			// worktree's own metadata; the shared config, hooks and
			// info stay the human's. A common directory outside the
			// program's own is read-only but for those (its HEAD,
			// packed-refs and a config.worktree it could create stay
			// the human's).
			if !under(g.CommonDir, s.Dir) {
				bind("--ro-bind", g.CommonDir)
			}
			for _, d := range []string{"objects", "refs", "logs"} {
				bind("--bind", filepath.Join(g.CommonDir, d))
			}
			if g.Dir != g.CommonDir {
				bind("--bind", g.Dir)
			}
			for _, f := range []string{"config", "config.worktree", "hooks", "info"} {
				bind("--ro-bind", filepath.Join(g.CommonDir, f))
			}
		}
	} else {
		a = append(a, "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	}
	if s.StateDir != "" && s.kind(s.StateDir) == 'd' {
		a = append(a, "--tmpfs", s.StateDir)
		for _, p := range s.Visible {
			if under(p, s.StateDir) {
				bind("--ro-bind", p)
			}
		}
		a = append(a, "--remount-ro", s.StateDir)
	}
	for _, d := range s.TmuxDirs {
		if filepath.IsAbs(d) {
			hide(d)
		}
	}
	if s.Profile == Workspace {
		for _, p := range Secrets {
			hide(s.home(p))
		}
		for _, p := range s.Hide {
			if r, ok := strings.CutPrefix(p, "~/"); ok {
				p = s.home(r)
			}
			if filepath.IsAbs(p) {
				hide(filepath.Clean(p))
			}
		}
	}
	return append(a, "--"), nil
}

// Command is bwrap's path and Args followed by argv.
func Command(bwrap string, s Spec, argv []string) ([]string, error) {
	a, err := Args(s)
	if err != nil || a == nil {
		return argv, err
	}
	return append(append([]string{bwrap}, a...), argv...), nil
}

// Wrap prepares s and returns argv wrapped in bwrap: env is the
// program's environment (the directories of its PATH stay reachable, and
// a CLAUDE_CONFIG_DIR of its own is kept), argv[0]'s directory stays
// reachable, and a workspace sandbox's git repository is found from
// s.Dir.
func Wrap(bwrap string, s Spec, env, argv []string) ([]string, error) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			s.Keep = append(s.Keep, filepath.SplitList(v)...)
		}
		if strings.HasPrefix(kv, "CLAUDE_CONFIG_DIR=") {
			s.OwnClaudeConfig = true
		}
	}
	if filepath.IsAbs(argv[0]) {
		s.Keep = append(s.Keep, filepath.Dir(argv[0]))
	}
	if s.Profile == Workspace {
		s.Git = FindGit(s.Dir)
	}
	if err := Prepare(s); err != nil {
		return nil, err
	}
	return Command(bwrap, s, argv)
}

// TmuxSocketDirs are every tmux socket directory of the user: private
// (the private servers'), the default server's (/tmp/tmux-UID), and the
// directory of the socket of the tmux termsprawl was started in ($TMUX).
func TmuxSocketDirs(private string) []string {
	dirs := []string{private, filepath.Join("/tmp", fmt.Sprintf("tmux-%d", os.Getuid()))}
	if t := os.Getenv("TMUX"); t != "" {
		if sock, _, _ := strings.Cut(t, ","); filepath.IsAbs(sock) {
			dirs = append(dirs, filepath.Dir(sock))
		}
	}
	return dirs
}

// FindGit finds the repository of dir without running git: the nearest
// .git above it (a directory, or a file "gitdir: PATH" of a linked
// worktree whose git directory names its common directory in
// "commondir"). nil when there is none.
func FindGit(dir string) *Git {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		p := filepath.Join(d, ".git")
		fi, err := os.Stat(p)
		if err == nil {
			if fi.IsDir() {
				return &Git{CommonDir: p, Dir: p}
			}
			b, err := os.ReadFile(p)
			if err != nil || len(b) > 4096 {
				return nil
			}
			gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
			if !ok {
				return nil
			}
			gd = strings.TrimSpace(gd)
			if !filepath.IsAbs(gd) {
				gd = filepath.Join(d, gd)
			}
			g := &Git{CommonDir: gd, Dir: filepath.Clean(gd)}
			if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil && len(c) < 4096 {
				cd := strings.TrimSpace(string(c))
				if !filepath.IsAbs(cd) {
					cd = filepath.Join(gd, cd)
				}
				g.CommonDir = filepath.Clean(cd)
			}
			return g
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

// Info is what Probe found.
type Info struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

// ErrMissing is Probe's error when bwrap is not there.
var ErrMissing = errors.New("bwrap (bubblewrap) is not installed")

// Fix is what to do when Probe fails, in CLI words.
const Fix = "install it (`apt-get install bubblewrap`), or launch with `--sandbox none` (or `default = \"none\"` under [sandbox] in config.toml)"

// LookPath finds bwrap: $TERMSPRAWL_BWRAP when set (tests point it at a
// missing file to take the missing-bwrap path), else bwrap on PATH.
func LookPath() (string, error) {
	if p := os.Getenv("TERMSPRAWL_BWRAP"); p != "" {
		if kind(p) != 'f' {
			return "", fmt.Errorf("%w: TERMSPRAWL_BWRAP=%s does not exist", ErrMissing, p)
		}
		return p, nil
	}
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("%w: no bwrap on PATH", ErrMissing)
	}
	return p, nil
}

// Probe finds bwrap, reads its version and runs a trivial sandbox with
// the namespaces every profile uses: nil error means launches can be
// sandboxed.
func Probe(ctx context.Context) (Info, error) {
	p, err := LookPath()
	if err != nil {
		return Info{}, err
	}
	info := Info{Path: p}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, p, "--version").Output(); err == nil {
		info.Version = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(out)), "bubblewrap"))
	}
	uid, gid := InsideIDs()
	cmd := exec.CommandContext(ctx, p, "--unshare-user", "--uid", fmt.Sprint(uid), "--gid", fmt.Sprint(gid),
		"--unshare-pid", "--die-with-parent", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--", "true")
	if out, err := cmd.CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 300 {
			msg = msg[:300] + "…"
		}
		return info, fmt.Errorf("bwrap %s refuses to start a sandbox (%v: %s); user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone, user.max_user_namespaces)", info.Version, err, msg)
	}
	return info, nil
}

// Prober remembers bwrap's last successful probe: a failure is probed
// again at the next call (bwrap may have been installed since).
type Prober struct {
	mu   sync.Mutex // guards path
	path string     // bwrap that ran a trivial sandbox; "" until one did
}

// Bwrap is the bwrap to wrap with, probed once it works.
func (p *Prober) Bwrap(ctx context.Context) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if want, err := LookPath(); err == nil && want == p.path {
		return p.path, nil
	}
	info, err := Probe(ctx)
	if err != nil {
		p.path = ""
		return "", err
	}
	p.path = info.Path
	return p.path, nil
}

// RemoveCache removes a node's private caches, making read-only
// directories writable first (Go's module cache is read-only).
func RemoveCache(dir string) {
	if _, err := os.Lstat(dir); err != nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}
