package toolserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
	"go.uber.org/goleak"
)

// counterTable is a table of one number for the persister's tests: each
// change adds one, and the file holds the number.
type counterTable struct {
	mu sync.Mutex // guards n
	n  int
}

func (c *counterTable) change() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *counterTable) snapshot() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return []byte(strconv.Itoa(c.n)), nil
}

// gatedWrites blocks the persister's first write until release is
// closed, and counts the writes.
type gatedWrites struct {
	entered chan struct{} // closed when the first write waits
	release chan struct{}
	mu      sync.Mutex // guards writes
	writes  int
}

func gate(p *persister) *gatedWrites {
	g := &gatedWrites{entered: make(chan struct{}), release: make(chan struct{})}
	p.beforeWrite = func() {
		g.mu.Lock()
		g.writes++
		first := g.writes == 1
		g.mu.Unlock()
		if first {
			close(g.entered)
			<-g.release
		}
	}
	return g
}

func (g *gatedWrites) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.writes
}

func newCounterPersister(t *testing.T) (*counterTable, *persister, string) {
	t.Helper()
	dir := t.TempDir()
	st := newStore(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	tab := &counterTable{}
	return tab, newPersister(st, "counter.json", tab.snapshot), filepath.Join(dir, persistDir, "counter.json")
}

func readCounter(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatalf("%s holds %q: %v", path, b, err)
	}
	return n
}

// Changes marked while a write is under way make exactly one next write,
// which holds the last of them; close ends the goroutine.
func TestPersistCoalesces(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tab, p, path := newCounterPersister(t)
	g := gate(p)
	tab.change()
	p.mark()
	<-g.entered // the first write holds the snapshot of 1
	for range 10 {
		tab.change()
		p.mark()
	}
	close(g.release)
	// A sync made now would add a write of its own; close waits for the
	// goroutine instead, which writes what is marked before it ends.
	p.close()
	if n := g.count(); n != 2 {
		t.Fatalf("%d writes for one change and 10 during its write, want 2", n)
	}
	if n := readCounter(t, path); n != 11 {
		t.Fatalf("the file holds %d, want 11", n)
	}
}

// sync returns only once a write that began after it is on disk, and
// callers that come while a write is under way share the next one.
func TestPersistSyncGroupCommit(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tab, p, path := newCounterPersister(t)
	defer p.close()
	g := gate(p)
	tab.change()
	p.mark()
	<-g.entered
	// Two callers change the table and wait, while the first write (of 1)
	// is blocked: theirs is the next one.
	var flights []*flight
	for range 2 {
		tab.change()
		flights = append(flights, p.begin())
	}
	if flights[0] != flights[1] {
		t.Fatal("two callers during one write wait on different writes")
	}
	select {
	case <-flights[0].done:
		t.Fatal("sync's write ended while the write before it was still blocked")
	default:
	}
	close(g.release)
	for _, f := range flights {
		if err := p.wait(context.Background(), f); err != nil {
			t.Fatal(err)
		}
	}
	if n := readCounter(t, path); n != 3 {
		t.Fatalf("after sync the file holds %d, want 3", n)
	}
	if n := g.count(); n != 2 {
		t.Fatalf("%d writes, want 2 (the blocked one and one shared by both callers)", n)
	}
	// A sync alone writes at once.
	tab.change()
	if err := p.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := readCounter(t, path); n != 4 {
		t.Fatalf("after sync the file holds %d, want 4", n)
	}
}

// sync returns the write's error with its cause; after close, mark and
// sync write themselves.
func TestPersistErrorsAndAfterClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tab := &counterTable{}
	bad := newPersister(&store{dir: filepath.Join(blocker, "sub"), log: slog.New(slog.NewTextHandler(io.Discard, nil))}, "x.json", tab.snapshot)
	err := bad.sync(context.Background())
	bad.close()
	if !errors.Is(err, syscall.ENOTDIR) {
		t.Fatalf("sync into a directory under a file: %v, want ENOTDIR", err)
	}

	tab, p, path := newCounterPersister(t)
	tab.change()
	p.mark()
	p.close()
	p.close() // twice is fine
	tab.change()
	p.mark()
	if n := readCounter(t, path); n != 2 {
		t.Fatalf("a mark after close: the file holds %d, want 2", n)
	}
	tab.change()
	if err := p.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := readCounter(t, path); n != 3 {
		t.Fatalf("a sync after close: the file holds %d, want 3", n)
	}
}

// A cancelled caller stops waiting; the write still happens.
func TestPersistSyncCancelled(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	tab, p, path := newCounterPersister(t)
	g := gate(p)
	tab.change()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := p.begin()
	<-g.entered
	if err := p.wait(ctx, f); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
	close(g.release)
	p.close()
	if n := readCounter(t, path); n != 1 {
		t.Fatalf("the file holds %d, want 1", n)
	}
}

// inProcessServer returns a function that starts an orchestrator and its
// tool server on dir, without HTTP; the caller closes both.
func inProcessServer(t *testing.T, tmux *tmuxtest.Server, dir string) func() (*orchestrator.Orchestrator, *Server) {
	t.Helper()
	cfg := orchestrator.Config{StateDir: dir, Socket: tmux.Socket, Version: "test", LaunchWatch: 100 * time.Millisecond}
	if err := tools.EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	opSess, err := ensureOperatorSession(dir, tmux.Socket)
	if err != nil {
		t.Fatal(err)
	}
	return func() (*orchestrator.Orchestrator, *Server) {
		o, err := orchestrator.New(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		api, err := New(o, cfg, "inst", opSess)
		if err != nil {
			o.Close()
			t.Fatal(err)
		}
		return o, api
	}
}

// A dialog is seen (listed, answerable) only once its id is on disk.
func TestPersistDialogOpensOnDisk(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	o, api := inProcessServer(t, tmux, dir)()
	defer o.Close()
	defer api.Close()
	op := &call{ctx: t.Context(), caller: operatorIdentity, s: api}
	info, err := op.launchFor(orchestrator.LaunchSpec{Command: []string{"cat"}, Agent: "custom", Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := o.Meta(info.Terminal)
	ag := &call{ctx: t.Context(), caller: tools.Identity{Node: info.Terminal, Role: tools.RoleAgent, Incarnation: m.Incarnation()}, s: api}
	g := gate(api.dialogs.disk)
	type opened struct {
		d   *dialog
		err error
	}
	done := make(chan opened, 1)
	go func() {
		d, _, err := api.dialogs.open(ag, dialogRequestArgs{Kind: "permission", Title: "Bash: make", TimeoutMS: 60000}, false)
		done <- opened{d, err}
	}()
	<-g.entered // its write is blocked: nobody sees it yet
	if l := api.dialogs.list(); len(l) != 0 {
		t.Fatalf("a dialog not on disk is listed: %+v", l)
	}
	api.dialogs.mu.Lock()
	var id string
	for k := range api.dialogs.opening {
		id = k
	}
	api.dialogs.mu.Unlock()
	if _, _, err := dialogAnswer(op, dialogAnswerArgs{Dialog: id, Mode: tools.AnswerAllow}); tools.KindOf(err) != tools.KindNotFound {
		t.Fatalf("an answer to dialog %q not on disk: %v, want not_found", id, err)
	}
	close(g.release)
	r := <-done
	if r.err != nil || r.d.ID != id {
		t.Fatalf("open: %+v %v, want %s", r.d, r.err, id)
	}
	raw, err := os.ReadFile(filepath.Join(dir, persistDir, dialogsFile))
	if err != nil {
		t.Fatal(err)
	}
	var d dialogsOnDisk
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.Dialogs) != 1 || d.Dialogs[0].ID != id || d.Next < idNumber(id) {
		t.Fatalf("dialogs.json when %s opened: %s", id, raw)
	}
	if l := api.dialogs.list(); len(l) != 1 || l[0].ID != id {
		t.Fatalf("open dialogs: %+v", l)
	}
}

// Agents' reports do not wait for the disk, and Server.Close writes what
// they marked: a new server restores the last report.
func TestPersistReportsFlushedAtClose(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	start := inProcessServer(t, tmux, dir)
	o, api := start()
	g := gate(api.agents.disk) // before anything writes agents.json
	op := &call{ctx: t.Context(), caller: operatorIdentity, s: api}
	info, err := op.launchFor(orchestrator.LaunchSpec{Command: []string{"cat"}, Agent: "custom", Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := o.Meta(info.Terminal)
	ag := &call{ctx: t.Context(), caller: tools.Identity{Node: info.Terminal, Role: tools.RoleAgent, Incarnation: m.Incarnation()}, s: api}

	if _, err := agentReport(ag, agentReportArgs{Event: "UserPromptSubmit", Message: "prompt: build"}); err != nil {
		t.Fatal(err)
	}
	<-g.entered // a write of agents.json is blocked…
	rep, err := agentReport(ag, agentReportArgs{Event: "Stop", Message: "done"})
	if err != nil {
		t.Fatal(err) // …and this one answered all the same
	}
	if rep.State != tools.AgentIdle {
		t.Fatalf("report: %+v", rep)
	}
	closed := make(chan struct{})
	go func() { api.Close(); close(closed) }()
	close(g.release)
	<-closed
	o.Close()

	raw, err := os.ReadFile(filepath.Join(dir, persistDir, agentsFile))
	if err != nil {
		t.Fatal(err)
	}
	var d agentsOnDisk
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if st := d.States[info.Terminal]; st.State != tools.AgentIdle || st.Message != "done" {
		t.Fatalf("agents.json after Close: %+v", st)
	}

	o, api = start()
	defer o.Close()
	defer api.Close()
	st, ok := api.agents.stateOfLife(info.Terminal, m.Incarnation())
	if !ok || st.State != tools.AgentIdle || st.Message != "done" || len(st.Evidence) < 2 {
		t.Fatalf("restored state: %+v (ok %v)", st, ok)
	}
}

// agents.json, encoded a state at a time, decodes to the table as a
// whole encoding of it does, through changes, removals and tasks.
func TestAgentsSnapshotMatchesTable(t *testing.T) {
	t.Parallel()
	tab := newAgentTable(nil)
	check := func(when string) {
		t.Helper()
		tab.mu.Lock()
		whole := agentsOnDisk{Next: tab.next, States: tab.states, Tasks: []*task{}}
		for _, tk := range tab.tasks {
			whole.Tasks = append(whole.Tasks, tk)
		}
		want, err := json.Marshal(whole)
		tab.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		got, err := tab.snapshot()
		if err != nil {
			t.Fatal(err)
		}
		var g, w agentsOnDisk
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v\n%s", when, err, got)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: agents.json decodes to\n%+v\nthe table is\n%+v", when, g, w)
		}
	}
	at := time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC)
	state := func(s string, n int) agentState {
		st := agentState{State: s, Message: "m " + s, Updated: at, Incarnation: "inc", Since: at}
		for i := range n {
			st.Evidence = append(st.Evidence, tools.Evidence{Source: tools.SourceHook, Event: "Stop", At: strconv.Itoa(i)})
		}
		return st
	}
	tab.mu.Lock()
	tab.setLocked("a", state("idle", 3))
	tab.setLocked("b", state("working", 1))
	tab.setLocked("c", state("waiting", 0))
	tab.mu.Unlock()
	check("three states")
	check("nothing changed")
	tab.mu.Lock()
	tab.setLocked("a", state("working", 4))
	tab.deleteLocked("b")
	tab.setLocked("d\"quoted", state("idle", 2))
	tab.next = 7
	tab.tasks["task-7"] = &task{Task: tools.Task{ID: "task-7", From: "a", To: "c", Text: "go", State: tools.TaskPending, Created: at}, FromInc: "inc", ToInc: "inc"}
	tab.mu.Unlock()
	check("a changed, b gone, d new, a task")
	tab.mu.Lock()
	tab.tasks["task-7"].State = tools.TaskCompleted
	tab.mu.Unlock()
	check("a task replied")
}
