package worktree

import (
	"context"
	"os"
	"strconv"
	"strings"
)

// Status is what terminal_list and `termsprawl worktrees` show of a
// worktree.
type Status struct {
	Exists bool `json:"exists"`
	// Dirty: uncommitted changes (tracked or untracked), DirtyFiles
	// naming them (at most MaxDirtyNames).
	Dirty      bool     `json:"dirty"`
	DirtyFiles []string `json:"dirty_files,omitempty"`
	// Ahead and Behind count commits against the base.
	Ahead  int `json:"ahead"`
	Behind int `json:"behind"`
	// Merged: the branch's head is in the base. Squash: not merged, but
	// every commit of it has an equivalent in the base (git cherry).
	Merged bool `json:"merged"`
	Squash bool `json:"squash_merged,omitempty"`
	Head   string
	// Detached: the worktree's HEAD is on no branch. Stray are the
	// commits of HEAD that no branch, tag or remote contains (git log
	// --oneline, at most MaxStrayNames): such a worktree is neither
	// merged nor prunable (CONTRACT §26).
	Detached bool     `json:"detached,omitempty"`
	Stray    []string `json:"stray,omitempty"`
}

// MaxDirtyNames bounds the uncommitted files a status names.
const MaxDirtyNames = 50

// Changes lists the worktree's uncommitted paths (tracked and untracked,
// as git status --porcelain names them) and whether the list was cut.
func (g Git) Changes(ctx context.Context, path string) ([]string, []string, error) {
	out, err := g.read(ctx, path, "status", "--porcelain=v1", "-z", "--untracked-files=all")
	if err != nil {
		return nil, nil, err
	}
	var tracked, untracked []string
	recs := strings.Split(out, "\x00")
	for i := 0; i < len(recs); i++ {
		r := recs[i]
		if len(r) < 4 {
			continue
		}
		code, name := r[:2], r[3:]
		if code == "??" {
			untracked = append(untracked, name)
			continue
		}
		tracked = append(tracked, name)
		if code[0] == 'R' || code[0] == 'C' {
			i++ // the rename's source follows
		}
	}
	return tracked, untracked, nil
}

// StatusOf reads a worktree's state (read-only git).
func (g Git) StatusOf(ctx context.Context, in Info) (Status, error) {
	var st Status
	if _, err := os.Stat(in.Path); err != nil {
		return st, nil
	}
	st.Exists = true
	tr, un, err := g.Changes(ctx, in.Path)
	if err != nil {
		return st, err
	}
	all := append(tr, un...)
	st.Dirty = len(all) > 0
	st.DirtyFiles = all[:min(len(all), MaxDirtyNames)]
	head, err := g.read(ctx, in.Path, "rev-parse", "HEAD")
	if err != nil {
		return st, err
	}
	st.Head = strings.TrimSpace(head)
	base := g.baseRef(ctx, in)
	if out, err := g.read(ctx, in.Path, "rev-list", "--left-right", "--count", base+"..."+st.Head); err == nil {
		f := strings.Fields(out)
		if len(f) == 2 {
			st.Behind, _ = strconv.Atoi(f[0])
			st.Ahead, _ = strconv.Atoi(f[1])
		}
	}
	st.Merged, st.Squash, err = g.mergedInto(ctx, in.Repo, in.Branch, base)
	if err != nil {
		return st, err
	}
	st.Stray, st.Detached, err = g.strays(ctx, in)
	if len(st.Stray) > 0 {
		st.Merged, st.Squash = false, false
		if n, err := g.read(ctx, in.Path, "rev-list", "--count", base+".."+st.Head); err == nil {
			st.Ahead, _ = strconv.Atoi(strings.TrimSpace(n))
		}
	}
	return st, err
}

// baseRef is the base to compare with: the base branch while it exists,
// else the commit the worktree started from.
func (g Git) baseRef(ctx context.Context, in Info) string {
	if in.Base != in.BaseCommit {
		if ok, _ := g.ok(ctx, in.Repo, "rev-parse", "--verify", "--quiet", "--end-of-options", in.Base+"^{commit}"); ok {
			return in.Base
		}
	}
	return in.BaseCommit
}

// mergedInto: whether branch's head is an ancestor of base (merged), or
// else whether git cherry finds every commit of it in base (squash).
func (g Git) mergedInto(ctx context.Context, repo, branch, base string) (merged, squash bool, err error) {
	ref := "refs/heads/" + branch
	merged, err = g.ok(ctx, repo, "merge-base", "--is-ancestor", ref, base)
	if err != nil || merged {
		return merged, false, err
	}
	out, err := g.read(ctx, repo, "cherry", base, ref)
	if err != nil {
		return false, false, err
	}
	var plus, minus int
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "+ "):
			plus++
		case strings.HasPrefix(l, "- "):
			minus++
		}
	}
	return false, plus == 0 && minus > 0, nil
}
