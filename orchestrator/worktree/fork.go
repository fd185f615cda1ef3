package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A fork's worktree (CONTRACT §30): branched from another worktree's
// HEAD, with that worktree's uncommitted changes copied in. The other
// worktree is only read: git runs there with GIT_OPTIONAL_LOCKS=0 (no
// index refresh written), its files are opened read-only beneath it.

// Head is the worktree holding dir: its top directory and HEAD commit.
func (g Git) Head(ctx context.Context, dir string) (top, commit string, err error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", "", refuse("%s is not a directory", dir)
	}
	out, err := g.read(ctx, dir, "rev-parse", "--show-toplevel", "HEAD")
	if err != nil {
		var ge *GitError
		if errors.As(err, &ge) && !errors.Is(err, ErrTimeout) {
			return "", "", refuse("%s is not in a git repository with a commit: --worktree needs one (%s)", dir, strings.TrimSpace(ge.Stderr))
		}
		return "", "", err
	}
	f := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(f) != 2 || f[0] == "" || f[1] == "" {
		return "", "", fmt.Errorf("git rev-parse in %s answered %q", dir, out)
	}
	return f[0], f[1], nil
}

// MaxCopyBytes bounds the uncommitted changes a fork copies (the diff
// of tracked files plus the untracked files).
const MaxCopyBytes = 512 << 20

// CopyChanges copies the uncommitted changes of the worktree at from
// into the worktree at to (branched from from's HEAD): the tracked
// modifications, staged or not, as git diff HEAD --binary applied with
// git apply, and the untracked files git does not ignore. It returns how
// many paths it copied.
func (g Git) CopyChanges(ctx context.Context, from, to string) (int, error) {
	var diff bytes.Buffer
	cw := &capWriter{b: &diff, max: MaxCopyBytes, full: func() {}}
	if _, err := g.do(ctx, call{dir: from, args: []string{"diff", "HEAD", "--binary", "--no-color", "--no-ext-diff", "--no-textconv"}, read: true, stdout: cw}); err != nil {
		return 0, fmt.Errorf("read the uncommitted changes of %s: %w", from, err)
	}
	if cw.cut {
		return 0, refuse("the uncommitted changes of %s are larger than %d MiB: commit them first, or fork without --worktree", from, MaxCopyBytes>>20)
	}
	copied := 0
	if diff.Len() > 0 {
		names, err := g.read(ctx, from, "diff", "HEAD", "--name-only", "-z", "--no-renames")
		if err != nil {
			return 0, fmt.Errorf("list the uncommitted changes of %s: %w", from, err)
		}
		copied += len(splitZ(names))
		if _, err := g.do(ctx, call{dir: to, args: []string{"apply", "--binary", "--whitespace=nowarn", "-"}, stdin: &diff}); err != nil {
			return 0, fmt.Errorf("apply the uncommitted changes of %s in %s: %w", from, to, err)
		}
	}
	out, err := g.read(ctx, from, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return copied, fmt.Errorf("list the untracked files of %s: %w", from, err)
	}
	untracked := splitZ(out)
	if len(untracked) == 0 {
		return copied, nil
	}
	src, err := os.OpenRoot(from)
	if err != nil {
		return copied, err
	}
	defer src.Close()
	dst, err := os.OpenRoot(to)
	if err != nil {
		return copied, err
	}
	defer dst.Close()
	var total int64
	for _, rel := range untracked {
		n, err := copyBeneath(src, dst, rel, MaxCopyBytes-total)
		if err != nil {
			return copied, fmt.Errorf("copy the untracked file %s into %s: %w", rel, to, err)
		}
		total += n
		copied++
	}
	return copied, nil
}

// copyBeneath copies the file rel of src to the same path beneath dst,
// neither root left (os.Root): a symlink is copied as a symlink, a
// regular file with its permissions, anything else skipped.
func copyBeneath(src, dst *os.Root, rel string, room int64) (int64, error) {
	rel = filepath.FromSlash(rel)
	st, err := src.Lstat(rel)
	if err != nil {
		return 0, err
	}
	if dir := filepath.Dir(rel); dir != "." {
		if err := dst.MkdirAll(dir, 0o755); err != nil {
			return 0, err
		}
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		t, err := src.Readlink(rel)
		if err != nil {
			return 0, err
		}
		return 0, dst.Symlink(t, rel)
	}
	if !st.Mode().IsRegular() {
		return 0, nil
	}
	if st.Size() > room {
		return 0, refuse("the untracked files are larger than %d MiB together: commit or remove some, or fork without --worktree", MaxCopyBytes>>20)
	}
	r, err := src.OpenFile(rel, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	w, err := dst.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(w, io.LimitReader(r, room+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return n, err
}
