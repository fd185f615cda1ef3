package toolserver

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/tables"
	"github.com/termsprawl/termsprawl/orchestrator/trust"
	"github.com/termsprawl/termsprawl/orchestrator/worktree"
	"github.com/termsprawl/termsprawl/tools"
)

// Worktrees (CONTRACT §21): the nodes' git worktrees, their turns' diffs
// and review comments. The git itself is orchestrator/worktree's; this
// file ties worktrees to nodes. Nothing here removes a worktree but
// worktree_finish and worktree_prune.

const (
	worktreesFile = "worktrees.json"
	// maxTurns is how many turns' diff texts a worktree keeps on disk
	// (their stats are all kept).
	maxTurns = 50
	// maxTurnStats is how many turns' stats a worktree keeps.
	maxTurnStats = 1000
	// wtStatusFresh is how long terminal_list shows a worktree's cached
	// status before it is read again (off the list's path).
	wtStatusFresh = 5 * time.Second
	// maxComments bounds a worktree's pending review comments.
	maxComments = 200
)

// WorktreeGit is the git the tool server runs (tests point it elsewhere).
var WorktreeGit worktree.Git

// wtEntry is one worktree termsprawl made, and the node working in it.
type wtEntry struct {
	worktree.Info
	Node        string                  `json:"node,omitempty"`
	Incarnation string                  `json:"incarnation,omitempty"`
	Owner       string                  `json:"owner,omitempty"`
	Created     time.Time               `json:"created"`
	Turns       []tools.WorktreeTurn    `json:"turns,omitempty"`
	Comments    []tools.WorktreeComment `json:"comments,omitempty"`
	// Listed are the uncommitted paths the last finish refusal named:
	// what a later --discard may throw away, and only that (CONTRACT §26).
	Listed []string `json:"discard_listed,omitempty"`
}

type wtCached struct {
	st  worktree.Status
	at  time.Time
	err error
}

type wtTable struct {
	mu         sync.Mutex // guards entries, status, refreshing, recording
	entries    []*wtEntry
	status     map[string]wtCached // by path
	refreshing bool
	recording  map[string]bool   // by path: a turn's diff under way
	disk       *tables.Persister // worktrees.json (persist.go): every change synced
	dir        string            // <state>/worktrees: the turns' diff texts ("" keeps none)
}

func newWtTable(st *tables.Store, stateDir string, disk *tables.Persister) *wtTable {
	t := &wtTable{status: map[string]wtCached{}, recording: map[string]bool{}, disk: disk}
	if stateDir != "" {
		t.dir = filepath.Join(stateDir, "worktrees")
	}
	var saved []*wtEntry
	if err := st.Load(worktreesFile, &saved); err == nil {
		for _, e := range saved {
			if e != nil && e.Path != "" {
				t.entries = append(t.entries, e)
			}
		}
	}
	return t
}

// snapshot is worktrees.json's content (the persister's, under t.mu).
func (t *wtTable) snapshot() ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return tables.Marshal(worktreesFile, t.entries)
}

// save writes the table (group commit); t.mu is not held. A failure is
// logged (persist.go): the table in memory stays right and the next
// change writes it again.
func (t *wtTable) save(ctx context.Context) { _ = t.disk.Sync(ctx) }

func (s *Server) wtTab() *wtTable {
	s.wtOnce.Do(func() { s.wt = newWtTable(s.store, s.stateDir, s.wtDisk) })
	return s.wt
}

// live reports whether e's node is the one running now.
func (s *Server) liveNode(e *wtEntry) (orchestrator.NodeMeta, bool) {
	if e.Node == "" {
		return orchestrator.NodeMeta{}, false
	}
	m, ok := s.eng.worktrees.Meta(e.Node)
	return m, ok && m.Incarnation() == e.Incarnation
}

func refusal(err error) error {
	if errors.Is(err, worktree.ErrRefused) {
		return tools.Errorf(tools.KindRejected, "%s", strings.TrimPrefix(err.Error(), worktree.ErrRefused.Error()+": "))
	}
	if errors.Is(err, worktree.ErrTimeout) {
		return tools.Errorf(tools.KindTimeout, "%w", err)
	}
	return err
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// prepareWorktree makes the worktree a launch asks for (or takes the one
// a persisted launch names) and points the launch at it.
func (c *call) prepareWorktree(spec *orchestrator.LaunchSpec) (*wtEntry, error) {
	w := spec.Worktree
	if spec.Host != "" {
		return nil, tools.Errorf(tools.KindUsage, "worktree is for nodes on this machine, not on host %s: leave out host, or make the worktree there yourself", spec.Host)
	}
	g := WorktreeGit
	t := c.s.wtTab()
	if w.Path != "" {
		return c.s.reuseWorktree(spec)
	}
	cwd := spec.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	name := strings.TrimPrefix(w.Branch, worktree.BranchPrefix)
	if w.Branch == "" {
		stem := strings.Trim(unsafeName.ReplaceAllString(cmp.Or(spec.Name, spec.Agent, "node"), "-"), "-.")
		name = cmp.Or(stem, "node") + "-" + time.Now().UTC().Format("20060102-150405")
	}
	info, err := g.Create(c.ctx, worktree.Spec{Dir: cwd, Name: name, Base: w.Base, Submodules: w.Submodules})
	for i := 2; w.Branch == "" && err != nil && i < 10 && errors.Is(err, worktree.ErrRefused) && strings.Contains(err.Error(), "already"); i++ {
		// A made-up name that is taken (two launches in one second): the next.
		info, err = g.Create(c.ctx, worktree.Spec{Dir: cwd, Name: name + "-" + strconv.Itoa(i), Base: w.Base, Submodules: w.Submodules})
	}
	if err != nil {
		return nil, refusal(err)
	}
	var notes []string
	copied, err := g.CopyIncluded(c.ctx, info, c.s.copyLimits())
	if err != nil {
		notes = append(notes, "copying .worktreeinclude's files failed: "+err.Error())
	}
	notes = append(notes, copied.Notes()...)
	if w.Submodules {
		if err := g.InitSubmodules(c.ctx, info); err != nil {
			notes = append(notes, "submodules: "+err.Error())
		}
	}
	setup, setupNote := c.s.approvedSetup(info)
	if setupNote != "" {
		notes = append(notes, setupNote)
	}
	for i, n := range notes {
		notes[i] = tools.VisibleLine(n) // paths and errors are outside text, shown in the node
	}
	if len(setup) > 0 || len(notes) > 0 {
		w.Program, w.Wrapped = spec.Command, true
		spec.Command = worktree.WrapSetup(notes, setup, spec.Command)
	}
	spec.Cwd = info.Path
	w.Name, w.Path, w.Repo, w.FullBranch, w.BaseCommit = info.Name, info.Path, info.Repo, info.Branch, info.BaseCommit
	w.Base = info.Base
	e := &wtEntry{Info: info, Created: time.Now().UTC(), Owner: spec.Owner}
	t.mu.Lock()
	t.entries = append(t.entries, e)
	t.mu.Unlock()
	t.save(c.ctx)
	return e, nil
}

// approvedSetup is the worktree's setup (.termsprawl/worktree.json of
// the new worktree, else of the main worktree, read beneath its root)
// when the human approved that exact content for the repository
// (`termsprawl trust REPO`, CONTRACT §26); otherwise none, and a note
// that says why and the command to run. The program starts either way.
// An agent's launch never approves: approving is the human CLI's, on
// trust.json, which no operation writes.
func (s *Server) approvedSetup(info worktree.Info) ([][]string, string) {
	var raw []byte
	var err error
	for _, dir := range []string{info.Path, info.Repo} {
		if raw, err = trust.ReadFile(dir, trust.WorktreeFile); !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, "setup not run: " + err.Error()
	}
	setup, err := worktree.ParseSetup(raw)
	if err != nil || len(setup) == 0 {
		if err != nil {
			return nil, err.Error()
		}
		return nil, ""
	}
	if trust.Open(s.stateDir).Check(info.Repo, trust.WorktreeFile, raw) {
		return setup, ""
	}
	s.log.Warn("a worktree's setup was not run: not approved", "repo", info.Repo, "hash", trust.Hash(raw))
	return nil, fmt.Sprintf("setup not run: this repository's %s/%s (%s) is not approved, or changed since it was; read it, then run `termsprawl trust %s` (or launch with --trust-setup)",
		trust.Dir, trust.WorktreeFile, trust.Hash(raw)[:19], shellWord(info.Repo))
}

// shellWord is s as one shell word, quoted only when it needs it.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// copyLimits are config.toml's bounds of .worktreeinclude copies.
func (s *Server) copyLimits() worktree.CopyLimits {
	w := s.conf.Current().Worktree
	return worktree.CopyLimits{MaxFile: int64(w.CopyMaxFile), MaxTotal: int64(w.CopyMaxTotal)}
}

// reuseWorktree takes the worktree a persisted launch names (a restore,
// or a launch request that carries its worktree's path): never made
// again, its setup not run again.
func (s *Server) reuseWorktree(spec *orchestrator.LaunchSpec) (*wtEntry, error) {
	w := spec.Worktree
	t := s.wtTab()
	// A launch request persisted with its worktree (a restore): the
	// worktree is reused, never made again.
	if st, err := os.Stat(w.Path); err != nil || !st.IsDir() {
		return nil, tools.Errorf(tools.KindRejected, "the worktree %s of this launch is gone; launch without its path to make a new one", w.Path)
	}
	spec.Cwd = w.Path
	if w.Wrapped {
		spec.Command, w.Wrapped = w.Program, false // the setup ran when the worktree was made
	}
	t.mu.Lock()
	for _, e := range t.entries {
		if e.Path == w.Path {
			t.mu.Unlock()
			return e, nil
		}
	}
	e := &wtEntry{Info: worktree.Info{Name: w.Name, Repo: w.Repo, Path: w.Path, Branch: w.FullBranch, Base: w.Base, BaseCommit: w.BaseCommit}, Created: time.Now().UTC(), Owner: spec.Owner}
	t.entries = append(t.entries, e)
	t.mu.Unlock()
	t.save(s.ctx)
	return e, nil
}

// attachWorktree ties a launched node to its worktree.
func (s *Server) attachWorktree(e *wtEntry, id string) {
	m, _ := s.eng.worktrees.Meta(id)
	t := s.wtTab()
	t.mu.Lock()
	e.Node, e.Incarnation = id, m.Incarnation()
	t.mu.Unlock()
	t.save(s.ctx)
}

// launchFailed: the node did not start; a worktree made for it is still
// pristine and goes again (never with --force; if git refuses, it stays).
func (s *Server) launchFailed(ctx context.Context, e *wtEntry, made bool) {
	if e == nil || !made {
		return
	}
	if _, err := WorktreeGit.Remove(ctx, e.Info); err != nil {
		s.log.Warn("worktree of a failed launch stays", "path", e.Path, "err", err)
		return
	}
	t := s.wtTab()
	t.mu.Lock()
	t.entries = slices.DeleteFunc(t.entries, func(x *wtEntry) bool { return x == e })
	t.mu.Unlock()
	t.save(ctx)
}

// annotateWorktrees puts the nodes' worktrees on terminal_list rows from
// the cache, and refreshes stale entries in the background (one refresh
// at a time): a slow git never holds the list.
func (s *Server) annotateWorktrees(rows []tools.NodeInfo) {
	t := s.wtTab()
	t.mu.Lock()
	byNode := map[string]*wtEntry{}
	for _, e := range t.entries {
		if e.Node != "" {
			byNode[e.Node+"\x00"+e.Incarnation] = e
		}
	}
	t.mu.Unlock()
	for i := range rows {
		// Only the node life that made it (a later node may reuse the id).
		if m, ok := s.eng.worktrees.Meta(rows[i].Terminal); ok && len(byNode) > 0 {
			if e := byNode[m.ID+"\x00"+m.Incarnation()]; e != nil {
				rows[i].Worktree = &tools.WorktreeState{Path: e.Path, Branch: e.Branch, Base: e.Base}
			}
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	stale := false
	for i := range rows {
		ws := rows[i].Worktree
		if ws == nil {
			continue
		}
		stale = t.fillStatusLocked(ws) || stale
	}
	if stale && !t.refreshing {
		t.refreshing = true
		entries := slices.DeleteFunc(slices.Clone(t.entries), func(e *wtEntry) bool { return e.Node == "" })
		go s.refreshWorktrees(entries)
	}
}

func (s *Server) refreshWorktrees(entries []*wtEntry) {
	t := s.wtTab()
	defer func() {
		t.mu.Lock()
		t.refreshing = false
		t.mu.Unlock()
	}()
	for _, e := range entries {
		st, err := WorktreeGit.StatusOf(s.ctx, e.Info)
		t.mu.Lock()
		t.status[e.Path] = wtCached{st: st, at: time.Now(), err: err}
		t.mu.Unlock()
	}
}

// worktreeTurnEnded records the diff of an agent's worktree at the end of
// its turn, off the caller's path (one at a time per worktree).
func (s *Server) worktreeTurnEnded(node, incarnation string) {
	e := s.wtTab().byNode(node, incarnation)
	if e == nil {
		return
	}
	t := s.wtTab()
	t.mu.Lock()
	if t.recording[e.Path] {
		t.mu.Unlock()
		return
	}
	t.recording[e.Path] = true
	t.mu.Unlock()
	go func() {
		defer func() {
			t.mu.Lock()
			delete(t.recording, e.Path)
			t.mu.Unlock()
		}()
		if _, _, err := s.recordTurn(s.ctx, e); err != nil {
			s.log.Warn("worktree turn diff", "node", node, "err", err)
		}
	}()
}

// fillStatusLocked puts the cached git status of ws's path into ws; it
// reports whether that status is missing or older than wtStatusFresh
// (a refresh is due). t.mu is held.
func (t *wtTable) fillStatusLocked(ws *tools.WorktreeState) (stale bool) {
	cs, ok := t.status[ws.Path]
	if !ok {
		return true
	}
	ws.Dirty, ws.Ahead, ws.Behind = cs.st.Dirty, cs.st.Ahead, cs.st.Behind
	ws.Checked = cs.at.UTC().Format(time.RFC3339)
	return time.Since(cs.at) > wtStatusFresh
}

func (t *wtTable) byNode(node, incarnation string) *wtEntry {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range t.entries {
		if e.Node == node && (incarnation == "" || e.Incarnation == incarnation) {
			return e
		}
	}
	return nil
}

// textDir is where a worktree's turns' texts are.
func (t *wtTable) textDir(e *wtEntry) string {
	if t.dir == "" {
		return ""
	}
	h := sha256.Sum256([]byte(e.Path))
	return filepath.Join(t.dir, unsafeName.ReplaceAllString(e.Name, "-")+"-"+hex.EncodeToString(h[:4]))
}

// recordTurn computes the worktree's diff and records it as its next turn.
func (s *Server) recordTurn(ctx context.Context, e *wtEntry) (tools.WorktreeTurn, worktree.Diff, error) {
	d, err := WorktreeGit.DiffOf(ctx, e.Info, worktree.MaxDiffBytes)
	if err != nil {
		return tools.WorktreeTurn{}, d, err
	}
	t := s.wtTab()
	t.mu.Lock()
	turn := tools.WorktreeTurn{Turn: len(e.Turns) + 1, At: time.Now().UTC().Format(time.RFC3339Nano), Head: d.Head,
		Files: d.Files, Insertions: d.Insertions, Deletions: d.Deletions}
	if n := len(e.Turns); n > 0 {
		turn.Turn = e.Turns[n-1].Turn + 1
	}
	e.Turns = append(e.Turns, turn)
	if len(e.Turns) > maxTurnStats {
		e.Turns = slices.Delete(e.Turns, 0, len(e.Turns)-maxTurnStats)
	}
	if dir := t.textDir(e); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err == nil {
			text := d.Text
			if d.Cut != "" {
				text = "# termsprawl: " + d.Cut + "\n" + text
			}
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("turn-%d.diff", turn.Turn)), []byte(text), 0o600)
			if old := turn.Turn - maxTurns; old > 0 {
				_ = os.Remove(filepath.Join(dir, fmt.Sprintf("turn-%d.diff", old)))
			}
		}
	}
	t.mu.Unlock()
	t.save(ctx)
	return turn, d, nil
}

// findWorktree resolves a worktree op's node: a live node's id, name or
// prefix, else a worktree's name, branch or path; the caller must be
// allowed to read (drive, for mutations) its node, and only the operator
// or the node that launched it may act on one whose node is gone.
func (c *call) findWorktree(ref string, drive bool) (*wtEntry, error) {
	t := c.s.wtTab()
	var found *wtEntry
	if id, err := c.s.eng.worktrees.Resolve(ref); err == nil {
		if m, ok := c.s.eng.worktrees.Meta(id); ok {
			found = t.byNode(id, m.Incarnation())
			if found == nil {
				return nil, tools.Errorf(tools.KindNotFound, "node %q has no worktree: launch with --worktree (worktree {} on terminal_launch / agent_launch) to get one; termsprawl worktrees lists them", ref)
			}
		}
	}
	if found == nil {
		t.mu.Lock()
		for _, e := range t.entries {
			if e.Name == ref || e.Branch == ref || e.Path == ref {
				found = e
				break
			}
		}
		t.mu.Unlock()
	}
	if found == nil {
		return nil, tools.Errorf(tools.KindNotFound, "no worktree for %q: give a node with a worktree, or a worktree's name or branch (termsprawl worktrees lists them)", ref)
	}
	if m, ok := c.s.liveNode(found); ok {
		if err := c.inRealm(m.ID); err != nil {
			return nil, err
		}
		if drive && !canDrive(c.caller, m) {
			return nil, tools.Errorf(tools.KindForbidden, "node %q may not finish or review the worktree of %q: only the operator and the nodes that launched it", c.caller.Node, m.ID)
		}
	} else if c.caller.Role != tools.RoleOperator && found.Owner != c.caller.Node {
		return nil, tools.Errorf(tools.KindForbidden, "the worktree %s belongs to a node that is gone: only the operator (or the node that launched it) may act on it", found.Path)
	}
	return found, nil
}

func worktreeHandlers() map[string]handler {
	return map[string]handler{
		"worktree_list":        reader(worktreeList),
		"worktree_diff":        reader(worktreeDiff),
		"worktree_comment":     mutator(worktreeComment),
		"worktree_review_send": mutator(worktreeReviewSend),
		"worktree_finish":      mutator(worktreeFinish),
		"worktree_prune":       mutator(worktreePrune),
	}
}

func (s *Server) listWorktrees(ctx context.Context, c *call) tools.WorktreeList {
	t := s.wtTab()
	t.mu.Lock()
	entries := slices.Clone(t.entries)
	t.mu.Unlock()
	out := tools.WorktreeList{Worktrees: []tools.WorktreeEntry{}}
	for _, e := range entries {
		if c != nil && c.caller.Role != tools.RoleOperator {
			if m, ok := s.liveNode(e); (!ok || c.inRealm(m.ID) != nil) && e.Owner != c.caller.Node {
				continue
			}
		}
		w := tools.WorktreeEntry{Name: e.Name, Repo: e.Repo, Path: e.Path, Branch: e.Branch, Base: e.Base}
		if _, ok := s.liveNode(e); ok {
			w.Node = e.Node
		}
		st, err := WorktreeGit.StatusOf(ctx, e.Info)
		if err != nil {
			w.Error = err.Error()
		}
		w.Exists, w.Dirty, w.DirtyFiles, w.Ahead, w.Behind, w.Merged, w.SquashMerged = st.Exists, st.Dirty, st.DirtyFiles, st.Ahead, st.Behind, st.Merged, st.Squash
		out.Worktrees = append(out.Worktrees, w)
	}
	return out
}

func worktreeList(c *call, _ noArgs) (tools.WorktreeList, error) {
	return c.s.listWorktrees(c.ctx, c), nil
}

type worktreeDiffArgs struct {
	wtNodeArg
	Turn int  `json:"turn"`
	Stat bool `json:"stat"`
}

func worktreeDiff(c *call, a worktreeDiffArgs) (tools.WorktreeDiff, error) {
	e, err := c.findWorktree(a.Node, false)
	if err != nil {
		return tools.WorktreeDiff{}, err
	}
	t := c.s.wtTab()
	out := tools.WorktreeDiff{Node: e.Node, Path: e.Path, Branch: e.Branch, Turn: a.Turn}
	if a.Turn > 0 {
		t.mu.Lock()
		out.Turns = slices.Clone(e.Turns)
		t.mu.Unlock()
		i := slices.IndexFunc(out.Turns, func(x tools.WorktreeTurn) bool { return x.Turn == a.Turn })
		if i < 0 {
			return out, tools.Errorf(tools.KindNotFound, "worktree %s has no turn %d: it has %d turns (worktree_diff without turn shows them)", e.Path, a.Turn, len(out.Turns))
		}
		tr := out.Turns[i]
		out.Head, out.Files, out.Insertions, out.Deletions = tr.Head, tr.Files, tr.Insertions, tr.Deletions
		if !a.Stat {
			b, err := os.ReadFile(filepath.Join(t.textDir(e), fmt.Sprintf("turn-%d.diff", a.Turn)))
			if err != nil {
				out.Cut = fmt.Sprintf("the text of turn %d is not kept (only the last %d turns' are)", a.Turn, maxTurns)
			} else {
				text := string(b)
				if first, rest, ok := strings.Cut(text, "\n"); ok && strings.HasPrefix(first, "# termsprawl: ") {
					out.Cut, text = strings.TrimPrefix(first, "# termsprawl: "), rest
				}
				out.Diff = text
			}
		}
		return out, nil
	}
	var d worktree.Diff
	_, live := c.s.liveNode(e)
	m, _ := c.s.eng.worktrees.Meta(e.Node)
	if live && m.Agent == "" && !a.Stat {
		// A node without an agent has no turn ends: each look records one.
		_, d, err = c.s.recordTurn(c.ctx, e)
	} else {
		limit := worktree.MaxDiffBytes
		if a.Stat {
			limit = -1
		}
		d, err = WorktreeGit.DiffOf(c.ctx, e.Info, limit)
	}
	if err != nil {
		return out, refusal(err)
	}
	t.mu.Lock()
	out.Turns = slices.Clone(e.Turns)
	out.Comments = slices.Clone(e.Comments)
	t.mu.Unlock()
	if out.Turns == nil {
		out.Turns = []tools.WorktreeTurn{}
	}
	out.Head, out.From, out.Files, out.Insertions, out.Deletions, out.Cut = d.Head, d.From, d.Files, d.Insertions, d.Deletions, d.Cut
	for _, f := range d.PerFile {
		out.FileStats = append(out.FileStats, tools.WorktreeFileStat(f))
	}
	if !a.Stat {
		out.Diff = d.Text
	}
	return out, nil
}

type worktreeCommentArgs struct {
	wtNodeArg
	File string `json:"file"`
	Line int    `json:"line"`
	Text string `json:"text"`
}

func worktreeComment(c *call, a worktreeCommentArgs) (tools.WorktreeComments, any, error) {
	e, err := c.findWorktree(a.Node, true)
	if err != nil {
		return tools.WorktreeComments{}, nil, err
	}
	file := filepath.ToSlash(filepath.Clean(a.File))
	if filepath.IsAbs(a.File) {
		rel, err := filepath.Rel(e.Path, a.File)
		if err != nil || strings.HasPrefix(rel, "..") {
			return tools.WorktreeComments{}, nil, tools.Errorf(tools.KindUsage, "file %s is outside the worktree %s: give a path relative to it", a.File, e.Path)
		}
		file = filepath.ToSlash(rel)
	}
	if strings.HasPrefix(file, "../") || file == ".." {
		return tools.WorktreeComments{}, nil, tools.Errorf(tools.KindUsage, "file %s is outside the worktree: give a path relative to %s", a.File, e.Path)
	}
	t := c.s.wtTab()
	t.mu.Lock()
	if len(e.Comments) >= maxComments {
		t.mu.Unlock()
		return tools.WorktreeComments{}, nil, tools.Errorf(tools.KindRejected, "worktree %s already has %d pending comments: send them (termsprawl review NODE --send) first", e.Path, maxComments)
	}
	e.Comments = append(e.Comments, tools.WorktreeComment{File: file, Line: a.Line, Text: a.Text, At: time.Now().UTC().Format(time.RFC3339)})
	r := tools.WorktreeComments{Node: e.Node, Comments: slices.Clone(e.Comments)}
	t.mu.Unlock()
	t.save(c.ctx)
	return r, r, nil
}

func worktreeReviewSend(c *call, a wtNodeArg) (tools.WorktreeReviewSent, any, error) {
	e, err := c.findWorktree(a.Node, true)
	if err != nil {
		return tools.WorktreeReviewSent{}, nil, err
	}
	m, live := c.s.liveNode(e)
	if !live || m.Agent == "" {
		return tools.WorktreeReviewSent{}, nil, tools.Errorf(tools.KindRejected, "the worktree %s has no agent running in it to send a review to", e.Path)
	}
	t := c.s.wtTab()
	t.mu.Lock()
	comments := slices.Clone(e.Comments)
	t.mu.Unlock()
	if len(comments) == 0 {
		return tools.WorktreeReviewSent{}, nil, tools.Errorf(tools.KindRejected, "no review comments for %s: add some first (termsprawl review NODE FILE:LINE TEXT)", e.Node)
	}
	d, err := WorktreeGit.DiffOf(c.ctx, e.Info, worktree.MaxDiffBytes)
	if err != nil {
		return tools.WorktreeReviewSent{}, nil, refusal(err)
	}
	text := reviewText(e, comments, d.Text)
	sent, _, err := agentSend(c, agentSendArgs{nodeArg: nodeArg{Node: e.Node}, Text: text, MessageID: "review-" + strconv.FormatInt(time.Now().UnixNano(), 36)})
	if err != nil {
		return tools.WorktreeReviewSent{}, nil, err
	}
	t.mu.Lock()
	e.Comments = slices.DeleteFunc(e.Comments, func(x tools.WorktreeComment) bool { return slices.Contains(comments, x) })
	left := tools.WorktreeComments{Node: e.Node, Comments: slices.Clone(e.Comments)}
	t.mu.Unlock()
	t.save(c.ctx)
	return tools.WorktreeReviewSent{Node: e.Node, Task: sent.Task, Comments: len(comments), Text: text}, left, nil
}

// wtNodeArg is the node of a worktree operation: resolved (and checked
// against the realm) like nodeArg when it names a node, else left for
// findWorktree to match a worktree's name, branch or path (its node may
// be gone while the worktree stays).
type wtNodeArg struct {
	Node string `json:"node"`
}

func (a *wtNodeArg) ref() *string  { return &a.Node }
func (a *wtNodeArg) orOther() bool { return true }

// reviewText is one task quoting each comment's file:line and its hunk.
func reviewText(e *wtEntry, comments []tools.WorktreeComment, diff string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Review of your changes on branch %s (%d comments). Please address each:\n", e.Branch, len(comments))
	for i, cm := range comments {
		fmt.Fprintf(&b, "\n%d. %s:%d: %s\n", i+1, cm.File, cm.Line, cm.Text)
		if h := hunkAt(diff, cm.File, cm.Line); h != "" {
			b.WriteString("```diff\n" + h + "```\n")
		} else {
			b.WriteString("(the diff does not change this line)\n")
		}
	}
	return b.String()
}

var hunkHeader = regexp.MustCompile(`^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@`)

// hunkAt is the hunk of diff that covers line of file's new version.
func hunkAt(diff, file string, line int) string {
	var (
		inFile bool
		cur    strings.Builder
		hit    bool
	)
	const maxHunk = 4000
	flush := func() string {
		if hit {
			s := cur.String()
			if len(s) > maxHunk {
				s = s[:maxHunk] + "\n… (hunk cut)\n"
			}
			return s
		}
		return ""
	}
	for _, l := range strings.SplitAfter(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			if s := flush(); s != "" {
				return s
			}
			inFile = strings.HasSuffix(strings.TrimRight(l, "\n"), " b/"+file)
			cur.Reset()
			hit = false
		case inFile && strings.HasPrefix(l, "@@"):
			if s := flush(); s != "" {
				return s
			}
			cur.Reset()
			hit = false
			if m := hunkHeader.FindStringSubmatch(l); m != nil {
				start, _ := strconv.Atoi(m[1])
				n := 1
				if m[2] != "" {
					n, _ = strconv.Atoi(m[2])
				}
				hit = line >= start && line < start+max(n, 1)
			}
			cur.WriteString(l)
		case inFile && cur.Len() > 0:
			cur.WriteString(l)
		}
	}
	return flush()
}

type worktreeFinishArgs struct {
	wtNodeArg
	Mode    string `json:"mode"`
	Discard bool   `json:"discard"`
}

func worktreeFinish(c *call, a worktreeFinishArgs) (tools.WorktreeFinished, any, error) {
	e, err := c.findWorktree(a.Node, true)
	if err != nil {
		return tools.WorktreeFinished{}, nil, err
	}
	t := c.s.wtTab()
	t.mu.Lock()
	listed := slices.Clone(e.Listed)
	t.mu.Unlock()
	out, err := WorktreeGit.Finish(c.ctx, e.Info, a.Mode, a.Discard, listed)
	var dirty *worktree.DirtyError
	if errors.As(err, &dirty) {
		// What --discard may throw away from now on: what this refusal
		// named.
		t.mu.Lock()
		e.Listed = slices.Clone(dirty.Paths)
		t.mu.Unlock()
		t.save(c.ctx)
	}
	if err != nil {
		return tools.WorktreeFinished{}, nil, refusal(err)
	}
	r := tools.WorktreeFinished{Path: e.Path, Branch: e.Branch, Mode: a.Mode, Merged: out.Merged, Pushed: out.Pushed,
		Removed: out.Removed, BranchDeleted: out.BranchDeleted, Discarded: out.Discarded, Message: out.Message}
	if _, ok := c.s.liveNode(e); ok {
		r.Node = e.Node
		if err := c.s.eng.worktrees.CloseNode(c.ctx, e.Node); err != nil {
			r.Message += "; closing node " + e.Node + " failed: " + err.Error()
		} else {
			r.Message += "; closed node " + e.Node
		}
	}
	t.mu.Lock()
	e.Node, e.Incarnation, e.Listed = "", "", nil
	if out.Removed {
		t.entries = slices.DeleteFunc(t.entries, func(x *wtEntry) bool { return x == e })
		delete(t.status, e.Path)
	}
	t.mu.Unlock()
	t.save(c.ctx)
	return r, c.s.listWorktrees(c.ctx, c), nil
}

func worktreePrune(c *call, _ noArgs) (tools.WorktreePruned, any, error) {
	if c.caller.Role != tools.RoleOperator {
		return tools.WorktreePruned{}, nil, tools.Errorf(tools.KindForbidden, "worktree_prune is the operator's (termsprawl worktrees prune); finish your own worktree with worktree_finish")
	}
	t := c.s.wtTab()
	t.mu.Lock()
	entries := slices.Clone(t.entries)
	t.mu.Unlock()
	out := tools.WorktreePruned{Removed: []tools.WorktreeFinished{}, Kept: []tools.WorktreeKept{}}
	for _, e := range entries {
		keep := func(reason string) {
			out.Kept = append(out.Kept, tools.WorktreeKept{Path: e.Path, Branch: e.Branch, Reason: reason})
		}
		if _, ok := c.s.liveNode(e); ok {
			keep("node " + e.Node + " is working in it")
			continue
		}
		ok, why, err := WorktreeGit.Prunable(c.ctx, e.Info)
		if err != nil {
			keep("cannot read it: " + err.Error())
			continue
		}
		if !ok {
			keep(why)
			continue
		}
		o, err := WorktreeGit.Remove(c.ctx, e.Info)
		if err != nil {
			keep("git refused to remove it: " + err.Error())
			continue
		}
		out.Removed = append(out.Removed, tools.WorktreeFinished{Path: e.Path, Branch: e.Branch, Mode: "prune", Merged: true, Removed: o.Removed, BranchDeleted: o.BranchDeleted, Message: o.Message})
		t.mu.Lock()
		t.entries = slices.DeleteFunc(t.entries, func(x *wtEntry) bool { return x == e })
		delete(t.status, e.Path)
		t.mu.Unlock()
		t.save(c.ctx)
	}
	return out, c.s.listWorktrees(c.ctx, c), nil
}
