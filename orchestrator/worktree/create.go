package worktree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// BranchPrefix is the prefix of every branch termsprawl makes.
const BranchPrefix = "termsprawl/"

// ErrRefused is wrapped by every refusal: bad input or a state of the
// repository that termsprawl will not change; nothing was created or
// removed.
var ErrRefused = errors.New("refused")

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, a...))
}

// Info is one worktree termsprawl made.
type Info struct {
	// Name is the NAME of --worktree NAME.
	Name string `json:"name"`
	// Repo is the main worktree of the repository.
	Repo string `json:"repo"`
	// Path is the worktree, outside the repository.
	Path string `json:"path"`
	// Branch is termsprawl/NAME.
	Branch string `json:"branch"`
	// Base is what the branch started from (a branch name, or a commit).
	Base string `json:"base"`
	// BaseCommit is the commit Base named then.
	BaseCommit string `json:"base_commit"`
}

// Spec asks for a new worktree of the repository that holds Dir.
type Spec struct {
	Dir        string
	Name       string
	Base       string // default: the main worktree's HEAD (its branch)
	Submodules bool
}

// MainWorktree is the main worktree of the repository holding dir.
func (g Git) MainWorktree(ctx context.Context, dir string) (string, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", refuse("%s is not a directory; pass --cwd inside a git repository", dir)
	}
	if ok, err := g.ok(ctx, dir, "rev-parse", "--is-inside-work-tree"); err != nil {
		return "", err
	} else if !ok {
		return "", refuse("%s is not in a git repository: --worktree needs one (git init there, or pass --cwd inside a repository)", dir)
	}
	out, err := g.read(ctx, dir, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return "", err
	}
	for _, f := range strings.Split(out, "\x00") {
		if p, ok := strings.CutPrefix(f, "worktree "); ok {
			return p, nil
		}
	}
	return "", fmt.Errorf("git worktree list in %s named no main worktree", dir)
}

// ValidName checks NAME: a valid branch name once prefixed, one path
// element's worth of text.
func (g Git) ValidName(ctx context.Context, name string) error {
	if name == "" {
		return refuse("the worktree name is empty; give --worktree NAME with a branch-safe name such as fix-login")
	}
	ok, err := g.ok(ctx, "", "check-ref-format", "refs/heads/"+BranchPrefix+name)
	if err != nil {
		return err
	}
	if !ok || strings.HasPrefix(name, "-") || name == "@" || strings.Contains(name, "@{") {
		// "@" passes check-ref-format as a branch's last component but
		// names HEAD to git, and as the worktree's directory git cannot
		// use it (.git/worktrees/@).
		return refuse("%q is not a valid branch name (git check-ref-format refuses %s%s); use letters, digits, - and _ (e.g. fix-login)", name, BranchPrefix, name)
	}
	return nil
}

// PathFor is where the worktree NAME of the repository whose main
// worktree is repo lives: <repo's parent>/<repo name>.worktrees/<name>.
func PathFor(repo, name string) string {
	return filepath.Join(filepath.Dir(repo), filepath.Base(repo)+".worktrees", strings.ReplaceAll(name, "/", "-"))
}

// Create makes the worktree of s and copies .worktreeinclude's files
// into it. Refusals (ErrRefused) create nothing.
func (g Git) Create(ctx context.Context, s Spec) (Info, error) {
	repo, err := g.MainWorktree(ctx, s.Dir)
	if err != nil {
		return Info{}, err
	}
	if err := g.ValidName(ctx, s.Name); err != nil {
		return Info{}, err
	}
	in := Info{Name: s.Name, Repo: repo, Branch: BranchPrefix + s.Name, Path: PathFor(repo, s.Name), Base: s.Base}
	if in.Base == "" {
		b, err := g.read(ctx, repo, "symbolic-ref", "-q", "--short", "HEAD")
		if in.Base = strings.TrimSpace(b); err != nil || in.Base == "" {
			in.Base = "HEAD"
		}
	}
	c, err := g.read(ctx, repo, "rev-parse", "--verify", "--quiet", "--end-of-options", in.Base+"^{commit}")
	if in.BaseCommit = strings.TrimSpace(c); err != nil || in.BaseCommit == "" {
		if errors.Is(err, ErrTimeout) {
			return Info{}, err
		}
		return Info{}, refuse("base %q is not a commit in %s; give an existing branch, tag or commit (git branch -a lists them)", in.Base, repo)
	}
	if in.Base == "HEAD" {
		in.Base = in.BaseCommit
	}
	if exists, err := g.ok(ctx, repo, "show-ref", "--verify", "--quiet", "refs/heads/"+in.Branch); err != nil {
		return Info{}, err
	} else if exists {
		if where := g.checkedOutAt(ctx, repo, in.Branch); where != "" {
			return Info{}, refuse("branch %s is already checked out at %s; pick another name, or finish that worktree first (termsprawl finish / termsprawl worktrees)", in.Branch, where)
		}
		return Info{}, refuse("branch %s already exists; pick another name, or delete the branch yourself once merged (git branch -d %s)", in.Branch, in.Branch)
	}
	if _, err := os.Lstat(in.Path); err == nil {
		return Info{}, refuse("path %s already exists; pick another name or move it away", in.Path)
	}
	if err := os.MkdirAll(filepath.Dir(in.Path), 0o755); err != nil {
		return Info{}, fmt.Errorf("make the worktrees directory: %w", err)
	}
	// --no-track: never an upstream written into the repository's config.
	if _, err := g.write(ctx, repo, "worktree", "add", "--no-track", "-b", in.Branch, "--", in.Path, in.BaseCommit); err != nil {
		// Leave nothing behind: git may have made the branch (it did not
		// exist above) before failing on the worktree.
		// (git branch -D refuses a branch a worktree still has.)
		if at, rerr := g.read(ctx, repo, "rev-parse", "--verify", "--quiet", "refs/heads/"+in.Branch); rerr == nil && strings.TrimSpace(at) == in.BaseCommit {
			_, _ = g.write(ctx, repo, "branch", "-D", "--", in.Branch)
		}
		return Info{}, fmt.Errorf("create the worktree: %w", err)
	}
	return in, nil
}

func (g Git) checkedOutAt(ctx context.Context, repo, branch string) string {
	out, err := g.read(ctx, repo, "worktree", "list", "--porcelain", "-z")
	if err != nil {
		return ""
	}
	cur := ""
	for _, f := range strings.Split(out, "\x00") {
		if p, ok := strings.CutPrefix(f, "worktree "); ok {
			cur = p
		}
		if f == "branch refs/heads/"+branch {
			return cur
		}
	}
	return ""
}

// Default bounds of .worktreeinclude copies (CONTRACT §26; config.toml's
// [worktree] copy_max_file and copy_max_total change them).
const (
	DefaultCopyMaxFile  int64 = 64 << 20
	DefaultCopyMaxTotal int64 = 256 << 20
)

// CopyLimits bound .worktreeinclude copies; zero fields take the
// defaults.
type CopyLimits struct {
	MaxFile, MaxTotal int64
}

func (l CopyLimits) withDefaults() CopyLimits {
	if l.MaxFile <= 0 {
		l.MaxFile = DefaultCopyMaxFile
	}
	if l.MaxTotal <= 0 {
		l.MaxTotal = DefaultCopyMaxTotal
	}
	return l
}

// Copied is what CopyIncluded did: the paths copied and those skipped,
// each with why (a link in the way, over a bound, not a regular file).
type Copied struct {
	Paths   []string
	Skipped []Skipped
}

// Skipped is one path CopyIncluded did not copy.
type Skipped struct {
	Path, Why string
}

// Notes are the lines a launch shows about the copy.
func (c Copied) Notes() []string {
	var notes []string
	if len(c.Paths) > 0 {
		notes = append(notes, fmt.Sprintf("copied %d files named by .worktreeinclude", len(c.Paths)))
	}
	for _, s := range c.Skipped {
		notes = append(notes, fmt.Sprintf("not copied from .worktreeinclude: %s: %s", s.Path, s.Why))
	}
	return notes
}

// CopyIncluded copies the files of the main worktree that the repository
// ignores and .worktreeinclude names (gitignore syntax) into the
// worktree. Every path is resolved beneath the new worktree through an
// os.Root, which never follows a symbolic link out of it (a checked-out
// `cfg -> ~/.ssh` cannot take `cfg/authorized_keys` into ~/.ssh), and
// read beneath the main worktree the same way. A path with such a link
// in the way is skipped and said, the rest copied; so are FIFOs,
// sockets and devices, files over lim.MaxFile, and whatever would take
// the total over lim.MaxTotal (CONTRACT §26).
func (g Git) CopyIncluded(ctx context.Context, in Info, lim CopyLimits) (Copied, error) {
	lim = lim.withDefaults()
	var res Copied
	inc := filepath.Join(in.Repo, ".worktreeinclude")
	if st, err := os.Lstat(inc); err != nil || !st.Mode().IsRegular() {
		return res, nil
	}
	out, err := g.read(ctx, in.Repo, "ls-files", "--others", "--ignored", "-z", "--exclude-from="+inc)
	if err != nil {
		return res, fmt.Errorf("list .worktreeinclude's files: %w", err)
	}
	cands := splitZ(out)
	if len(cands) == 0 {
		return res, nil
	}
	// Only files the repository itself ignores (never untracked work).
	ign, err := g.do(ctx, call{dir: in.Repo, args: []string{"check-ignore", "-z", "--stdin"}, read: true, stdin: strings.NewReader(strings.Join(cands, "\x00") + "\x00")})
	if err != nil && len(ign) == 0 {
		return res, nil // exit 1: none ignored
	}
	src, err := os.OpenRoot(in.Repo)
	if err != nil {
		return res, fmt.Errorf("open the main worktree %s: %w", in.Repo, err)
	}
	defer src.Close()
	dst, err := os.OpenRoot(in.Path)
	if err != nil {
		return res, fmt.Errorf("open the worktree %s: %w", in.Path, err)
	}
	defer dst.Close()
	var total int64
	for _, rel := range splitZ(string(ign)) {
		n, why, err := copyIncluded(src, dst, rel, lim.MaxFile, lim.MaxTotal-total)
		switch {
		case err != nil:
			res.Skipped = append(res.Skipped, Skipped{Path: rel, Why: err.Error()})
		case why != "":
			res.Skipped = append(res.Skipped, Skipped{Path: rel, Why: why})
		default:
			total += n
			res.Paths = append(res.Paths, rel)
		}
	}
	return res, nil
}

func splitZ(s string) []string {
	var out []string
	for _, f := range strings.Split(s, "\x00") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// linkOut reports whether err is a path that would leave its root.
func linkOut(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes")
}

// copyIncluded copies rel from src to dst, both roots. It returns the
// bytes copied, or why it skipped rel ("" when copied), or an error.
func copyIncluded(src, dst *os.Root, rel string, maxFile, left int64) (int64, string, error) {
	st, err := src.Lstat(rel)
	if err != nil {
		if linkOut(err) {
			return 0, "a symbolic link in its path leads out of the main worktree", nil
		}
		return 0, "", err
	}
	mode := st.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		t, err := src.Readlink(rel)
		if err != nil {
			return 0, "", err
		}
		if err := mkParent(dst, rel); err != nil {
			return 0, "", err
		}
		if err := dst.Symlink(t, rel); err != nil {
			if linkOut(err) {
				return 0, "a symbolic link in its path in the worktree leads out of it: refused", nil
			}
			return 0, "", err
		}
		return 0, "", nil
	case mode&fs.ModeNamedPipe != 0:
		return 0, "a FIFO, skipped", nil
	case mode&fs.ModeSocket != 0:
		return 0, "a socket, skipped", nil
	case mode&fs.ModeDevice != 0:
		return 0, "a device, skipped", nil
	case !mode.IsRegular():
		return 0, "not a regular file, skipped", nil
	case st.Size() > maxFile:
		return 0, fmt.Sprintf("%d bytes, over the bound of %d per file (config.toml [worktree] copy_max_file), skipped", st.Size(), maxFile), nil
	case st.Size() > left:
		return 0, fmt.Sprintf("%d bytes would take the copies over their bound in total (config.toml [worktree] copy_max_total), skipped", st.Size()), nil
	}
	r, err := src.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return 0, "", err
	}
	defer r.Close()
	if rs, err := r.Stat(); err != nil || !rs.Mode().IsRegular() {
		return 0, "not a regular file when opened, skipped", nil
	}
	if err := mkParent(dst, rel); err != nil {
		if linkOut(err) {
			return 0, "a symbolic link in its path in the worktree leads out of it: refused", nil
		}
		return 0, "", err
	}
	w, err := dst.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, mode.Perm())
	if err != nil {
		if linkOut(err) {
			return 0, "a symbolic link in its path in the worktree leads out of it: refused", nil
		}
		return 0, "", err
	}
	limit := min(maxFile, left)
	n, err := io.Copy(w, io.LimitReader(r, limit+1))
	if err == nil && n > limit {
		err = errGrew
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = dst.Remove(rel)
		if errors.Is(err, errGrew) {
			return 0, "grew past its bound while being copied, skipped", nil
		}
		return 0, "", err
	}
	return n, "", nil
}

var errGrew = errors.New("grew past its bound")

// mkParent makes rel's directories beneath root.
func mkParent(root *os.Root, rel string) error {
	dir := filepath.Dir(rel)
	if dir == "." {
		return nil
	}
	return root.MkdirAll(dir, 0o755)
}

// InitSubmodules clones the worktree's submodules (one level) without
// writing the repository's configuration: each submodule's URL from
// .gitmodules is handed to git on its command line.
func (g Git) InitSubmodules(ctx context.Context, in Info) error {
	out, err := g.read(ctx, in.Path, "config", "--file", ".gitmodules", "--null", "--get-regexp", `^submodule\..*\.url$`)
	if err != nil {
		return nil // no .gitmodules, or no URLs
	}
	var args []string
	for _, rec := range splitZ(out) {
		key, url, ok := strings.Cut(rec, "\n")
		if !ok {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(key, "submodule."), ".url")
		if strings.HasPrefix(url, "./") || strings.HasPrefix(url, "../") {
			// Relative to the superproject's remote, else its directory.
			if abs, err := filepath.Abs(filepath.Join(in.Repo, url)); err == nil {
				url = abs
			}
		}
		args = append(args, "-c", "submodule."+name+".url="+url, "-c", "submodule."+name+".active=true")
	}
	if len(args) == 0 {
		return nil
	}
	args = append(args, "submodule", "update", "--checkout")
	if _, err := g.do(ctx, call{dir: in.Path, args: args, limit: SetupTimeout}); err != nil {
		return fmt.Errorf("initialize submodules: %w", err)
	}
	return nil
}
