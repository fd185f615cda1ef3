package worktree

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxStrayNames bounds the commits a refusal names.
const MaxStrayNames = 10

// strays are the commits reachable from the worktree's HEAD that no
// branch, tag or remote-tracking ref contains (git log --oneline), at
// most MaxStrayNames, and whether HEAD is detached. Removing the
// worktree would lose them: `git worktree remove` drops HEAD's reflog
// (CONTRACT §26).
func (g Git) strays(ctx context.Context, in Info) (commits []string, detached bool, err error) {
	if _, err := os.Stat(in.Path); err != nil {
		return nil, false, nil
	}
	ok, err := g.ok(ctx, in.Path, "symbolic-ref", "-q", "HEAD")
	if err != nil {
		return nil, false, err
	}
	detached = !ok
	args := []string{"log", "--oneline", "--no-decorate", fmt.Sprintf("--max-count=%d", MaxStrayNames+1), "HEAD", "--not", "--branches", "--tags", "--remotes"}
	if in.BaseCommit != "" {
		args = append(args, in.BaseCommit)
	}
	out, err := g.read(ctx, in.Path, args...)
	if err != nil {
		return nil, detached, err
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l != "" {
			commits = append(commits, l)
		}
	}
	return commits, detached, nil
}

// headRefusal is the refusal to remove a worktree whose HEAD is detached
// or holds commits in no branch, tag or remote, naming them; nil when
// the worktree can go.
func (g Git) headRefusal(ctx context.Context, in Info) error {
	commits, detached, err := g.strays(ctx, in)
	if err != nil {
		return err
	}
	if len(commits) > 0 {
		more := ""
		if len(commits) > MaxStrayNames {
			commits, more = commits[:MaxStrayNames], " and more"
		}
		return refuse("worktree %s holds commits that no branch, tag or remote contains (%s%s): removing it would lose them; put them on a branch (git -C %q switch -c NAME, or git -C %q branch NAME HEAD) and finish again, or finish --keep",
			in.Path, strings.Join(commits, "; "), more, in.Path, in.Path)
	}
	if detached {
		return refuse("worktree %s has a detached HEAD: switch it back to its branch (git -C %q switch %s) and finish again, or finish --keep", in.Path, in.Path, in.Branch)
	}
	return nil
}

// changedIncluded are the files .worktreeinclude gave the worktree (the
// main worktree's ignored files it names) whose copy in the worktree now
// differs from the main worktree's: an edited .env, lost with the
// worktree unless named first.
func (g Git) changedIncluded(ctx context.Context, in Info) ([]string, error) {
	inc := filepath.Join(in.Repo, ".worktreeinclude")
	if st, err := os.Lstat(inc); err != nil || !st.Mode().IsRegular() {
		return nil, nil
	}
	if _, err := os.Stat(in.Path); err != nil {
		return nil, nil
	}
	out, err := g.read(ctx, in.Repo, "ls-files", "--others", "--ignored", "-z", "--exclude-from="+inc)
	if err != nil {
		return nil, err
	}
	src, err := os.OpenRoot(in.Repo)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	dst, err := os.OpenRoot(in.Path)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	var changed []string
	for _, rel := range splitZ(out) {
		if differs(src, dst, rel) {
			changed = append(changed, rel)
		}
	}
	return changed, nil
}

// differs reports whether rel's regular file in dst differs from src's
// (a file missing from dst was deleted there: not worth naming).
func differs(src, dst *os.Root, rel string) bool {
	ds, err := dst.Lstat(rel)
	if err != nil || !ds.Mode().IsRegular() {
		return false
	}
	ss, err := src.Lstat(rel)
	if err != nil || !ss.Mode().IsRegular() || ss.Size() != ds.Size() {
		return true
	}
	if ds.Size() > DefaultCopyMaxFile {
		return !ds.ModTime().Equal(ss.ModTime())
	}
	a, err1 := readAll(src, rel)
	b, err2 := readAll(dst, rel)
	return err1 != nil || err2 != nil || !bytes.Equal(a, b)
}

func readAll(r *os.Root, rel string) ([]byte, error) {
	f, err := r.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, DefaultCopyMaxFile+1))
}

// DirtyError is Finish's refusal of a worktree with uncommitted changes
// (or edited .worktreeinclude files): Paths are every path it listed, which
// a later --discard may throw away, and only those (CONTRACT §26).
type DirtyError struct {
	Paths []string
	msg   string
}

func (e *DirtyError) Error() string { return e.msg }

// Unwrap makes it a refusal (ErrRefused).
func (e *DirtyError) Unwrap() error { return ErrRefused }

// notListed are the paths of now that listed does not hold.
func notListed(now, listed []string) []string {
	var out []string
	for _, p := range now {
		if !slices.Contains(listed, p) {
			out = append(out, p)
		}
	}
	return out
}
