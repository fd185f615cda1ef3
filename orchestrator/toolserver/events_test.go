package toolserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// next reads events until ok accepts one, within d.
func nextEvent(t *testing.T, ev *tools.Events, d time.Duration, what string, ok func(tools.StreamEvent) bool) tools.StreamEvent {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case e, open := <-ev.C():
			if !open {
				t.Fatalf("the stream ended before %s", what)
			}
			if ok(e) {
				return e
			}
		case <-timer.C:
			t.Fatalf("no %s within %v", what, d)
		}
	}
}

func screenText(s *tools.StreamScreen) string {
	var b strings.Builder
	for _, l := range s.Lines {
		for _, r := range l.R {
			b.WriteString(r.T)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func stateHas(st *tools.StreamState, id string) bool {
	for _, n := range st.Nodes {
		if n.Terminal == id {
			return true
		}
	}
	return false
}

// The event stream: the operator's token gets a frame with every node and
// the shown node's screen, then its changed rows and new nodes; an
// agent's token, no token and an Origin are refused; after a restart the
// client reconnects by itself (a new endpoint.json) and gets a new frame.
func TestEventStream(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	a := apiLaunch(t, s.op(), "bash", "--norc", "--noprofile")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := tools.Subscribe(ctx, s.op(), a, tools.EventsOptions{Retry: 100 * time.Millisecond})
	defer ev.Close()
	f := nextEvent(t, ev, 20*time.Second, "a frame", func(e tools.StreamEvent) bool { return e.Frame != nil })
	if !stateHas(&f.Frame.State, a) || f.Frame.Screen == nil || f.Frame.Screen.Node != a {
		t.Fatalf("frame without node %s or its screen: %+v", a, f.Frame)
	}
	apiOK(t, s.op(), "terminal_submit", map[string]any{"terminal": a, "text": "echo MARK-$((6*7))"}, nil)
	nextEvent(t, ev, 20*time.Second, "the marker's rows", func(e tools.StreamEvent) bool {
		return e.Screen != nil && strings.Contains(screenText(e.Screen), "MARK-42")
	})
	b := apiLaunch(t, s.op(), "bash", "--norc", "--noprofile")
	nextEvent(t, ev, 20*time.Second, "the new node's row", func(e tools.StreamEvent) bool { return e.State != nil && stateHas(e.State, b) })

	// Refusals.
	ep, err := tools.ReadEndpoint(tools.EndpointPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := tools.EventsURL(ep.URL, "")
	agent, _ := tools.ReadSession(s.session(a))
	for _, c := range []struct {
		name, token, origin string
		status              int
	}{
		{"agent token", agent.Token, "", http.StatusForbidden},
		{"no token", "", "", http.StatusUnauthorized},
		{"origin", "", "http://evil.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var res tools.Result
		_ = json.NewDecoder(resp.Body).Decode(&res)
		resp.Body.Close()
		if resp.StatusCode != c.status || res.OK {
			t.Errorf("%s: HTTP %d %+v, want %d", c.name, resp.StatusCode, res, c.status)
		}
	}
	agentEv := tools.Subscribe(ctx, s.session(a), "", tools.EventsOptions{})
	down := nextEvent(t, agentEv, 20*time.Second, "the agent's refusal", func(e tools.StreamEvent) bool { return e.Down })
	agentEv.Close()
	if !strings.Contains(down.Err.Error(), "operator") {
		t.Errorf("the agent's stream failed with %v, want a sentence naming the operator", down.Err)
	}

	// Restart: down, then a new frame from the new orchestrator.
	s.stop()
	nextEvent(t, ev, 20*time.Second, "the stream going down", func(e tools.StreamEvent) bool { return e.Down })
	s2 := apiStart(t, tmux, dir)
	_ = s2
	f = nextEvent(t, ev, 30*time.Second, "a frame after the restart", func(e tools.StreamEvent) bool { return e.Frame != nil })
	if !stateHas(&f.Frame.State, a) {
		t.Fatalf("the frame after the restart has no node %s", a)
	}
}

// A program's exit reaches the stream at once (Orchestrator.OnStatus
// kicks it), not at the backstop re-read, set here to an hour.
func TestEventStreamSeesAnExitAtOnce(t *testing.T) {
	t.Parallel()
	testMonitorPoll = time.Hour
	t.Cleanup(func() { testMonitorPoll = 0 })
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	a := apiLaunch(t, s.op(), "sh", "-c", "read line; exit 3")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev := tools.Subscribe(ctx, s.op(), "", tools.EventsOptions{Retry: 100 * time.Millisecond})
	defer ev.Close()
	nextEvent(t, ev, 20*time.Second, "a frame", func(e tools.StreamEvent) bool { return e.Frame != nil })
	apiOK(t, s.op(), "terminal_type", map[string]any{"terminal": a, "text": "x\n"}, nil)
	nextEvent(t, ev, 20*time.Second, "the exit in the node's row", func(e tools.StreamEvent) bool {
		if e.State == nil {
			return false
		}
		for _, n := range e.State.Nodes {
			if n.Terminal == a && n.Status == tools.StatusExited && n.ExitCode != nil && *n.ExitCode == 3 {
				return true
			}
		}
		return false
	})
}
