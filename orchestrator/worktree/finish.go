package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Finish modes.
const (
	FinishMerge = "merge"
	FinishPush  = "push"
	FinishKeep  = "keep"
)

// PushTimeout bounds a push.
const PushTimeout = 2 * time.Minute

// Outcome is what finishing did.
type Outcome struct {
	Merged        bool     `json:"merged"`
	Pushed        string   `json:"pushed,omitempty"` // remote/branch
	Removed       bool     `json:"removed"`
	BranchDeleted bool     `json:"branch_deleted"`
	Discarded     []string `json:"discarded,omitempty"`
	Message       string   `json:"message"`
}

// Finish merges (into the base, in the main worktree), pushes (to the
// branch's upstream or origin) or keeps the worktree. Uncommitted changes
// and .worktreeinclude files edited in the worktree are refused with a
// *DirtyError naming them, unless discard; with listed (the paths an
// earlier refusal named, nil when there was none) discard throws away
// only those, and a path that appeared since is refused again. A HEAD
// that is detached or holds commits no branch, tag or remote contains is
// refused naming them (CONTRACT §26). The worktree is removed only once
// its commits are merged or pushed, the branch deleted only when merged.
func (g Git) Finish(ctx context.Context, in Info, mode string, discard bool, listed []string) (Outcome, error) {
	var out Outcome
	switch mode {
	case FinishMerge, FinishPush, FinishKeep:
	default:
		return out, refuse("unknown finish mode %q: give merge, push or keep", mode)
	}
	_, statErr := os.Stat(in.Path)
	exists := statErr == nil
	if exists && mode != FinishKeep {
		if err := g.headRefusal(ctx, in); err != nil {
			return out, err
		}
		tr, un, err := g.Changes(ctx, in.Path)
		if err != nil {
			return out, err
		}
		inc, err := g.changedIncluded(ctx, in)
		if err != nil {
			return out, err
		}
		all := append(append(slices.Clone(tr), un...), inc...)
		if len(all) > 0 && !discard {
			return out, dirtyRefusal(in, all, nil)
		}
		if extra := notListed(all, listed); len(all) > 0 && listed != nil && len(extra) > 0 {
			return out, dirtyRefusal(in, all, extra)
		}
		if len(all) > 0 {
			if err := g.discard(ctx, in.Path, tr, un); err != nil {
				return out, err
			}
			out.Discarded = all
		}
	}
	if mode == FinishKeep {
		out.Message = fmt.Sprintf("kept worktree %s on branch %s", in.Path, in.Branch)
		return out, nil
	}
	base := g.baseRef(ctx, in)
	merged, squash, err := g.mergedInto(ctx, in.Repo, in.Branch, base)
	if err != nil {
		return out, err
	}
	switch mode {
	case FinishMerge:
		if squash {
			return out, refuse("branch %s looks squash-merged into %s (git cherry finds its changes there as other commits) but is not merged: termsprawl counts it unmerged and keeps it; check, then delete it yourself (git branch -D %s) or finish --keep", in.Branch, base, in.Branch)
		}
		if !merged {
			if err := g.merge(ctx, in); err != nil {
				return out, err
			}
		}
		out.Merged = true
	case FinishPush:
		dest, err := g.push(ctx, in)
		if err != nil {
			return out, err
		}
		out.Pushed = dest
		out.Merged = merged
	}
	// Merged or pushed: the worktree may go (never with --force).
	if exists {
		if _, err := g.write(ctx, in.Repo, "worktree", "remove", "--", in.Path); err != nil {
			out.Message = fmt.Sprintf("%s; the worktree %s stays: %v", out.summary(in), in.Path, err)
			return out, nil
		}
		out.Removed = true
		_ = os.Remove(filepath.Dir(in.Path)) // the .worktrees directory once empty
	}
	if out.Merged {
		if _, err := g.write(ctx, in.Repo, "branch", "-d", "--", in.Branch); err == nil {
			out.BranchDeleted = true
		}
	}
	out.Message = out.summary(in)
	return out, nil
}

func (o Outcome) summary(in Info) string {
	var parts []string
	if o.Merged {
		parts = append(parts, fmt.Sprintf("%s is merged into %s", in.Branch, in.Base))
	}
	if o.Pushed != "" {
		parts = append(parts, fmt.Sprintf("pushed %s to %s", in.Branch, o.Pushed))
	}
	if o.Removed {
		parts = append(parts, "removed worktree "+in.Path)
	}
	switch {
	case o.BranchDeleted:
		parts = append(parts, "deleted branch "+in.Branch)
	case o.Pushed != "" && !o.Merged:
		parts = append(parts, "kept branch "+in.Branch+" (not merged)")
	}
	return strings.Join(parts, "; ")
}

// dirtyRefusal refuses a worktree with uncommitted paths all (extra: the
// ones no earlier refusal listed).
func dirtyRefusal(in Info, all, extra []string) *DirtyError {
	names := all
	more := ""
	if len(names) > MaxDirtyNames {
		more = fmt.Sprintf(" and %d more", len(names)-MaxDirtyNames)
		names = names[:MaxDirtyNames]
	}
	msg := fmt.Sprintf("%v: worktree %s has uncommitted changes (or .worktreeinclude files edited there, which go with it): %s%s; commit them (git -C %q commit -a, git add for new files), or pass --discard to throw them away", ErrRefused, in.Path, strings.Join(names, ", "), more, in.Path)
	if len(extra) > 0 {
		msg = fmt.Sprintf("%v: worktree %s changed since the refusal that listed what --discard throws away: %s appeared since, and --discard throws away only what was listed; look at them, then finish again (it lists %s%s for --discard)", ErrRefused, in.Path, strings.Join(extra[:min(len(extra), MaxDirtyNames)], ", "), strings.Join(names, ", "), more)
	}
	return &DirtyError{Paths: all, msg: msg}
}

// discard throws away the named uncommitted changes of a worktree.
func (g Git) discard(ctx context.Context, path string, tracked, untracked []string) error {
	if len(tracked) > 0 {
		args := []string{"restore", "--source=HEAD", "--staged", "--worktree", "--"}
		for _, f := range tracked {
			args = append(args, ":(literal)"+f) // names, never patterns
		}
		if _, err := g.write(ctx, path, args...); err != nil {
			return fmt.Errorf("discard changes: %w", err)
		}
	}
	_, un, err := g.Changes(ctx, path)
	if err != nil {
		return err
	}
	named := append(slices.Clone(tracked), untracked...)
	for _, rel := range append(untracked, un...) {
		if !slices.Contains(named, rel) {
			continue // appeared since it was listed: never thrown away unnamed
		}
		p := filepath.Join(path, rel)
		if err := os.RemoveAll(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("discard %s: %w", rel, err)
		}
	}
	return nil
}

// merge merges the branch into its base in the main worktree, which must
// be clean (tracked files) and on the base branch.
func (g Git) merge(ctx context.Context, in Info) error {
	if in.Base == in.BaseCommit {
		return refuse("the worktree started from commit %s, not a branch: nothing to merge into; use --push, or merge %s yourself", short(in.BaseCommit), in.Branch)
	}
	cur, _ := g.read(ctx, in.Repo, "symbolic-ref", "-q", "--short", "HEAD")
	if cur = strings.TrimSpace(cur); cur != in.Base {
		on := cur
		if on == "" {
			on = "a detached HEAD"
		}
		return refuse("the main worktree %s is on %s, not on %s: switch it to %s (git -C %q switch %s) and finish again", in.Repo, on, in.Base, in.Base, in.Repo, in.Base)
	}
	out, err := g.read(ctx, in.Repo, "status", "--porcelain=v1", "-z", "--untracked-files=no")
	if err != nil {
		return err
	}
	if dirty := splitZ(out); len(dirty) > 0 {
		names := make([]string, 0, len(dirty))
		for _, r := range dirty[:min(len(dirty), MaxDirtyNames)] {
			if len(r) > 3 {
				names = append(names, r[3:])
			}
		}
		return refuse("the main worktree %s has uncommitted changes (%s): commit or stash them there, then finish again", in.Repo, strings.Join(names, ", "))
	}
	if _, err := g.do(ctx, call{dir: in.Repo, args: []string{"merge", "--no-edit", "-m", "Merge " + in.Branch, "refs/heads/" + in.Branch}, limit: PushTimeout}); err != nil {
		_, _ = g.write(ctx, in.Repo, "merge", "--abort")
		return fmt.Errorf("%w: merging %s into %s failed and was aborted (nothing changed): %v; merge it yourself, or --push", ErrRefused, in.Branch, in.Base, err)
	}
	return nil
}

// push pushes the branch to its upstream, else to origin under its own
// name; no upstream is recorded (no configuration written).
func (g Git) push(ctx context.Context, in Info) (string, error) {
	remote, dst := "", "refs/heads/"+in.Branch
	if up, err := g.read(ctx, in.Repo, "rev-parse", "--abbrev-ref", "--symbolic-full-name", in.Branch+"@{upstream}"); err == nil {
		if r, b, ok := strings.Cut(strings.TrimSpace(up), "/"); ok {
			remote, dst = r, "refs/heads/"+b
		}
	}
	if remote == "" {
		rs, err := g.read(ctx, in.Repo, "remote")
		if err != nil {
			return "", err
		}
		for _, r := range strings.Fields(rs) {
			if r == "origin" {
				remote = r
			}
		}
		if remote == "" {
			return "", refuse("branch %s has no upstream and the repository has no remote named origin: add one (git remote add origin URL), or use --merge or --keep", in.Branch)
		}
	}
	if _, err := g.do(ctx, call{dir: in.Repo, args: []string{"push", "--porcelain", "--", remote, "refs/heads/" + in.Branch + ":" + dst}, limit: PushTimeout}); err != nil {
		return "", fmt.Errorf("push %s to %s: %w", in.Branch, remote, err)
	}
	return remote + "/" + strings.TrimPrefix(dst, "refs/heads/"), nil
}

func short(c string) string { return c[:min(len(c), 12)] }

// Prunable reports whether a worktree may be removed by prune: clean and
// merged (a squash merge is not), with the reason when not.
func (g Git) Prunable(ctx context.Context, in Info) (bool, string, error) {
	st, err := g.StatusOf(ctx, in)
	if err != nil {
		return false, "", err
	}
	switch {
	case st.Exists && st.Dirty:
		return false, "uncommitted changes: " + strings.Join(st.DirtyFiles, ", "), nil
	case len(st.Stray) > 0:
		return false, "commits that no branch, tag or remote contains: " + strings.Join(st.Stray, "; "), nil
	case st.Detached:
		return false, "its HEAD is detached: kept", nil
	case st.Squash:
		return false, "squash-merged, which counts as unmerged: kept", nil
	case !st.Merged:
		return false, fmt.Sprintf("not merged (%d commits ahead of %s)", st.Ahead, in.Base), nil
	}
	return true, "", nil
}

// Remove removes a clean worktree and deletes its branch if merged (git
// worktree remove without --force, git branch -d).
func (g Git) Remove(ctx context.Context, in Info) (Outcome, error) {
	var out Outcome
	if _, err := os.Stat(in.Path); err == nil {
		if _, err := g.write(ctx, in.Repo, "worktree", "remove", "--", in.Path); err != nil {
			return out, err
		}
		out.Removed = true
		_ = os.Remove(filepath.Dir(in.Path))
	}
	if _, err := g.write(ctx, in.Repo, "branch", "-d", "--", in.Branch); err == nil {
		out.BranchDeleted = true
		out.Merged = true
	}
	out.Message = out.summary(in)
	return out, nil
}
