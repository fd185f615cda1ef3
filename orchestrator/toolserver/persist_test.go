package toolserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/orchestrator/tables"
	"github.com/termsprawl/termsprawl/tools"
)

// gatedWrites blocks a table's first write (tables.Persister.SetBeforeWrite) until release is
// closed, and counts the writes.
type gatedWrites struct {
	entered chan struct{} // closed when the first write waits
	release chan struct{}
	mu      sync.Mutex // guards writes
	writes  int
}

func gate(p *tables.Persister) *gatedWrites {
	g := &gatedWrites{entered: make(chan struct{}), release: make(chan struct{})}
	p.SetBeforeWrite(func() {
		g.mu.Lock()
		g.writes++
		first := g.writes == 1
		g.mu.Unlock()
		if first {
			close(g.entered)
			<-g.release
		}
	})
	return g
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

// Agents' reports do not wait for the disk, and Server.Close writes what
// they marked: a new server restores the last report.
func TestPersistReportsFlushedAtClose(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	start := inProcessServer(t, tmux, dir)
	o, api := start()
	g := gate(api.agents.Persister()) // before anything writes agents.json
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
	var d struct {
		States map[string]agentState `json:"states"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if st := d.States[info.Terminal]; st.State != tools.AgentIdle || st.Message != "done" {
		t.Fatalf("agents.json after Close: %+v", st)
	}

	o, api = start()
	defer o.Close()
	defer api.Close()
	st, ok := api.agents.StateOfLife(info.Terminal, m.Incarnation())
	if !ok || st.State != tools.AgentIdle || st.Message != "done" || len(st.Evidence) < 2 {
		t.Fatalf("restored state: %+v (ok %v)", st, ok)
	}
}
