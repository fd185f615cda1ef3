package toolserver

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/monitor"
	"github.com/termsprawl/termsprawl/tools"
)

// The web monitor (CONTRACT §14) reads the engine and this server's
// tables through the interfaces package monitor defines.

// monitorLink holds the monitor's URL once Serve mounted it.
type monitorLink struct {
	url atomic.Pointer[string]
	mon atomic.Pointer[monitor.Monitor] // the event streams' hub (events.go)
}

func (s *Server) setMonitorURL(u string) { s.monitor.url.Store(&u) }

func (s *Server) monitorURL() string {
	if p := s.monitor.url.Load(); p != nil {
		return *p
	}
	return ""
}

// MonitorSide is monitor.Side: agent states, pending dialogs, watches.
func (s *Server) MonitorSide() monitor.SideState {
	st := monitor.SideState{Agents: map[string]monitor.AgentState{}, Dialogs: s.dialogs.List()}
	for id, a := range s.agents.States() {
		st.Agents[id] = monitor.AgentState{State: a.State, Message: a.Message, Updated: a.Updated,
			Since: a.Since, NeedsHuman: a.State == tools.AgentWaiting}
	}
	st.Watches = s.watchViews()
	st.Worktrees = s.streamWorktrees() // worktree_stream.go
	return st
}

// watchViews lists the watches for the monitor, oldest first.
func (s *Server) watchViews() []monitor.Watch {
	list := s.watches.List()
	out := make([]monitor.Watch, 0, len(list))
	for _, w := range list {
		out = append(out, monitor.Watch{ID: w.ID, Terminal: w.Terminal, Owner: w.Owner, What: describeWait(w.Spec), Fired: w.Fired})
	}
	return out
}

// describeWait says what a wait waits for, in words.
func describeWait(sp tools.WaitSpec) string {
	switch {
	case sp.Text != "":
		return fmt.Sprintf("%s %q", sp.Wait, sp.Text)
	case sp.Pattern != "":
		return fmt.Sprintf("%s /%s/", sp.Wait, sp.Pattern)
	case sp.QuietMS > 0:
		return fmt.Sprintf("%s %d ms", sp.Wait, sp.QuietMS)
	}
	return sp.Wait
}

// monitorEngine is monitor.Engine over the orchestrator.
type monitorEngine struct{ o monitorSource }

func (e monitorEngine) Peek() []tools.NodeInfo { return e.o.Peek() }

// testMonitorPoll, if set, replaces the streams' backstop re-read
// interval (tests that must see a change without it).
var testMonitorPoll time.Duration

func (e monitorEngine) Show(ctx context.Context, id string) (monitor.Shown, error) {
	sh, err := e.o.Show(ctx, id)
	if err != nil {
		return nil, err
	}
	return sh, nil
}

// mountMonitor builds the monitor of this server, served beside /call on
// the same listener; it returns the handler for every request.
func (s *Server) mountMonitor(saved monitor.Saved, hostPort func() string, next http.Handler) (*monitor.Monitor, http.Handler, error) {
	m, err := monitor.New(monitor.Config{Saved: saved, Engine: monitorEngine{s.eng.monitor}, Side: s, HostPort: hostPort, Log: s.log, Poll: testMonitorPoll})
	if err != nil {
		return nil, nil, err
	}
	s.setMonitorURL(m.URL())
	s.monitor.mon.Store(m)
	return m, m.Mount(s.events(m, hostPort, next)), nil
}

// SemanticTree is the monitor's view of a node's latest semantic commit.
func (e monitorEngine) SemanticTree(id string) (uint64, []tools.SemanticMatch, bool) {
	return e.o.SemanticTree(id)
}
