package hosts

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/termsprawl/termsprawl/tmuxctl"
)

// The mirror client of a host (CONTRACT §23): one control client, attached
// to a hidden session into which every node's window is linked, carries
// the output and layout changes of all the host's nodes. sshd's
// MaxSessions (default 10) bounds the sessions of one ssh connection and
// every control client is one; so a host costs three sessions (admin,
// waiter, mirror) whatever its node count, plus a few short-lived ones
// for remote commands (execSlots). docs/ARCHITECTURE.md has the
// measurements.

// MirrorSession is the hidden session whose windows are links to every
// node window of the host's server. It is not a node.
const MirrorSession = "termsprawl-mirror"

// Mirror is a host server's shared control client and the fan-out of its
// notifications to the nodes.
type Mirror struct {
	c *tmuxctl.Client

	mu    sync.Mutex             // guards subs and ended
	subs  map[string]*MirrorLink // by pane id
	ended bool                   // dispatch returned: the client is gone
	wg    sync.WaitGroup
}

// MirrorLink is one node's share of the mirror client.
type MirrorLink struct {
	Window, Pane  string
	Columns, Rows int
	// Events carries the layout changes of the node's pane (coalesced:
	// one pending event means "reseed").
	Events <-chan tmuxctl.Event
	// Done is closed when the mirror client ended or the node's session
	// ended (its window is left only in the mirror session).
	Done <-chan struct{}

	events chan tmuxctl.Event
	ended  chan struct{}
	once   sync.Once
}

func (l *MirrorLink) end() { l.once.Do(func() { close(l.ended) }) }

// startMirror makes the mirror session if needed and attaches the client.
func startMirror(ctx context.Context, s *Tmux, admin *tmuxctl.Client) (*Mirror, error) {
	if _, err := admin.Run(ctx, tmuxctl.Command("has-session", "-t", "="+MirrorSession)); err != nil {
		var ce *tmuxctl.CommandError
		if !errors.As(err, &ce) {
			return nil, err
		}
		if _, err := admin.Run(ctx, tmuxctl.Command("new-session", "-d", "-s", MirrorSession, "-n", MirrorSession, "-x", "80", "-y", "24", "--", "sleep", "infinity")); err != nil {
			return nil, fmt.Errorf("make the mirror session: %w", err)
		}
	}
	c, err := tmuxctl.Start(ctx, s.ClientConfig("attach-session", "-t", "="+MirrorSession))
	if err != nil {
		return nil, fmt.Errorf("attach the mirror client: %w", err)
	}
	// Fall behind for more than a few seconds and tmux pauses the pane
	// rather than stalling the program; the node's pump then reseeds.
	if err := c.SetPauseAfter(ctx, 5*time.Second); err != nil {
		c.Close()
		return nil, fmt.Errorf("mirror client: %w", err)
	}
	m := &Mirror{c: c, subs: map[string]*MirrorLink{}}
	m.wg.Add(1)
	go m.dispatch()
	return m, nil
}

// Client is the shared control client: commands about one node go
// through it like through a node's own client (every one names its pane).
func (m *Mirror) Client() *tmuxctl.Client { return m.c }

// dispatch hands each layout change to the nodes whose panes it names, and
// after a session ended ends the links whose session is gone. It is the
// mirror's goroutine (owner: the host's server; ends with the client).
func (m *Mirror) dispatch() {
	defer m.wg.Done()
	defer func() {
		m.mu.Lock()
		m.ended = true
		for _, l := range m.subs {
			l.end()
		}
		m.mu.Unlock()
	}()
	for ev := range m.c.Events() {
		switch e := ev.(type) {
		case tmuxctl.LayoutChange:
			m.mu.Lock()
			for _, p := range e.Panes {
				if l := m.subs[p.Pane]; l != nil {
					select {
					case l.events <- e:
					default: // one pending is enough: the node reseeds
					}
				}
			}
			m.mu.Unlock()
		case tmuxctl.SessionEvent:
			if e.Name == "sessions-changed" {
				m.reapOrphans()
			}
		}
	}
}

// reapOrphans ends the links of nodes whose session ended (someone killed
// it): their windows are left in the mirror session alone. Such a window
// is killed, as killing its session meant.
func (m *Mirror) reapOrphans() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := m.c.Run(ctx, tmuxctl.Command("list-windows", "-t", "="+MirrorSession, "-F", "#{window_id} #{window_linked_sessions} #{pane_id} #{window_name}"))
	if err != nil {
		return
	}
	for _, line := range out {
		f := strings.Fields(line)
		if len(f) < 3 || f[1] != "1" || (len(f) == 4 && f[3] == MirrorSession) {
			continue
		}
		m.mu.Lock()
		l := m.subs[f[2]]
		delete(m.subs, f[2])
		m.mu.Unlock()
		if l == nil {
			continue // not a node of ours (yet): adoption links what it knows
		}
		m.c.Pause(ctx, l.Pane)
		m.c.Run(ctx, tmuxctl.Command("kill-window", "-t", "="+MirrorSession+":"+f[0]))
		l.end()
	}
}

// Link links session's window into the mirror session (unless it is
// already there, as after a reconnect or a restart) and subscribes its
// pane. The pane's output is the client's Pane stream from then on.
func (m *Mirror) Link(ctx context.Context, session string) (*MirrorLink, error) {
	out, err := m.c.Run(ctx, tmuxctl.Command("display-message", "-p", "-t", "="+session+":", "#{window_id} #{pane_id} #{pane_width} #{pane_height}"))
	if err != nil {
		return nil, fmt.Errorf("find pane of %s: %w", session, err)
	}
	if len(out) != 1 || len(strings.Fields(out[0])) != 4 {
		return nil, fmt.Errorf("find pane of %s: unexpected %q", session, out)
	}
	f := strings.Fields(out[0])
	cols, _ := strconv.Atoi(f[2])
	rows, _ := strconv.Atoi(f[3])
	l := &MirrorLink{Window: f[0], Pane: f[1], Columns: cols, Rows: rows, events: make(chan tmuxctl.Event, 1), ended: make(chan struct{})}
	l.Events, l.Done = l.events, l.ended
	m.mu.Lock()
	if old := m.subs[l.Pane]; old != nil {
		old.end()
	}
	m.subs[l.Pane] = l
	if m.ended {
		l.end() // the client is gone already
	}
	m.mu.Unlock()
	wins, err := m.c.Run(ctx, tmuxctl.Command("list-windows", "-t", "="+MirrorSession, "-F", "#{window_id}"))
	if err == nil && !contains(wins, l.Window) {
		_, err = m.c.Run(ctx, tmuxctl.Command("link-window", "-d", "-s", l.Window, "-t", "="+MirrorSession+":"))
	}
	if err != nil {
		m.drop(l)
		return nil, fmt.Errorf("link %s into the host's mirror session: %w", session, err)
	}
	// A pane this client paused earlier (a node that left) is continued:
	// its output from now on is the new mirror's.
	m.c.Continue(ctx, l.Pane)
	return l, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func (m *Mirror) drop(l *MirrorLink) {
	m.mu.Lock()
	if m.subs[l.Pane] == l {
		delete(m.subs, l.Pane)
	}
	m.mu.Unlock()
	l.end()
}

// Unlink is a node leaving the mirror (a close, or the node's end): its
// pane was paused for this client already (detach); its window is
// unlinked from the mirror session, so the node's session is again the
// only one that holds it and ending that session ends the window.
func (m *Mirror) Unlink(ctx context.Context, l *MirrorLink) {
	m.drop(l)
	if m.c.Err() != nil {
		return
	}
	if _, err := m.c.Run(ctx, tmuxctl.Command("unlink-window", "-t", "="+MirrorSession+":"+l.Window)); err != nil {
		var ce *tmuxctl.CommandError
		if !errors.As(err, &ce) { // a CommandError: not linked (any more)
			return
		}
	}
	m.c.DropPane(l.Pane)
}

// close ends the mirror client and waits for its goroutine.
func (m *Mirror) close() {
	m.c.Close()
	m.wg.Wait()
}
