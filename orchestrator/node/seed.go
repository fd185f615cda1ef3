package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/orchestrator/termio"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Attach starts the node's control client and its pump, and seeds the
// mirror before returning.
func (n *Node) Attach(ctx context.Context) error {
	if n.hooks().Attach != nil {
		if err := n.hooks().Attach(n); err != nil {
			return err
		}
	}
	cols, rows, err := n.startClient(ctx) // remote_mirror.go
	if err != nil {
		return err
	}
	c := n.Client
	n.Scr = screen.NewWithOptions(max(cols, 1), max(rows, 1), screen.Options{BaseRevision: RevisionBase(n.Meta.Epoch)})
	// Fall behind for more than a few seconds and tmux pauses the pane
	// rather than stalling the program; the pump then reseeds.
	if err := c.SetPauseAfter(ctx, 5*time.Second); err != nil {
		n.Log.Debug("pause-after not set", "err", err)
	}
	if err := n.reseed(ctx); err != nil {
		n.leaveClient()
		n.Scr.Close()
		return err
	}
	if err := n.recordOnStart(); err != nil {
		n.leaveClient()
		n.Scr.Close()
		return err
	}
	go n.pump()
	n.startLogs()
	return nil
}

// seedFormat is read in the same command line as capture-pane.
const seedFormat = "#{pane_width} #{pane_height} #{cursor_x} #{cursor_y} #{cursor_flag} #{alternate_on} " +
	"#{keypad_cursor_flag} #{mouse_standard_flag}#{mouse_button_flag}#{mouse_all_flag}#{mouse_utf8_flag} #{mouse_sgr_flag} " +
	"#{scroll_region_upper} #{scroll_region_lower} #{alternate_saved_x} #{alternate_saved_y} " +
	hosts.DeadFormat + " #{pane_pid} #{pane_title}"

// parseSeed turns the display-message line into a SeedState plus the
// pane's dead flag and exit status (see hosts.CheckDead) and pid.
func parseSeed(line string, zombie func(int) (int, bool)) (st screen.SeedState, dead bool, status, pid int, err error) {
	f := strings.SplitN(line, " ", 16) // the title, last, may hold spaces
	if len(f) != 16 {
		return st, false, 0, 0, fmt.Errorf("parse pane state %q: %d fields", line, len(f))
	}
	num := func(i int) int {
		v, e := strconv.Atoi(f[i])
		if e != nil && err == nil && f[i] != "" {
			err = fmt.Errorf("parse pane state field %d %q: %w", i, f[i], e)
		}
		return v
	}
	st.Columns, st.Rows = num(0), num(1)
	st.CursorX, st.CursorY = num(2), num(3)
	st.CursorVisible = f[4] == "1"
	st.AltScreen = f[5] == "1"
	st.AppCursor = f[6] == "1"
	st.MouseTracking, st.MouseUTF8 = termio.ParseMouseFlags(f[7])
	st.Mouse = st.MouseTracking != 0
	st.MouseSGR = f[8] == "1"
	st.ScrollTop, st.ScrollBottom = num(9), num(10)
	st.PrimaryCursorX, st.PrimaryCursorY = num(11), num(12)
	if st.PrimaryCursorX > 1<<20 || st.PrimaryCursorX < 0 {
		st.PrimaryCursorX = 0
	}
	if st.PrimaryCursorY > 1<<20 || st.PrimaryCursorY < 0 {
		st.PrimaryCursorY = 0
	}
	pid = num(14)
	dead, status = hosts.CheckDead(f[13], pid, zombie)
	st.Title = f[15]
	return st, dead, status, pid, err
}

// A seed that found the pane dead with nothing on it is repeated after
// deadReseed, then twice and four times as long (maxDeadSeeds in all).
const (
	deadReseed   = 150 * time.Millisecond
	maxDeadSeeds = 3
)

// reseed reads tmux's view of the pane in one command line and replaces
// the mirror with it; output up to the reply is dropped from the stream.
// Only the pump goroutine (or attach, before the pump starts) calls it.
func (n *Node) reseed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmds := []string{
		tmuxctl.Command("display-message", "-p", "-t", n.Pane, seedFormat),
		tmuxctl.Command("capture-pane", "-p", "-e", "-N", "-t", n.Pane),
		tmuxctl.Command("capture-pane", "-p", "-e", "-N", "-a", "-t", n.Pane),
	}
	if n.Asleep.Load() {
		// Output continued first: what follows the seed's mark is applied.
		if err := n.Client.Continue(ctx, n.Pane); err != nil {
			return fmt.Errorf("wake pane %s: %w", n.Pane, err)
		}
	}
	outs, marks, err := n.Client.RunManyMarked(ctx, cmds...)
	// The last command fails when there is no alternate screen: expected.
	var ce *tmuxctl.CommandError
	if err != nil && !(errors.As(err, &ce) && ce.Index == 2 && len(outs) == 2) {
		return fmt.Errorf("read pane %s for seeding: %w", n.Pane, err)
	}
	if len(outs[0]) != 1 {
		return fmt.Errorf("read pane %s for seeding: unexpected %q", n.Pane, outs[0])
	}
	st, dead, code, pid, perr := parseSeed(outs[0][0], n.ZombieStatus)
	if perr != nil {
		return perr
	}
	st.Lines = outs[1]
	if st.AltScreen && len(outs) == 3 {
		st.PrimaryLines = outs[2]
	}
	// tmux 3.3a has no format for bracketed paste: keep what the stream
	// told the mirror.
	st.BracketedPaste = n.Scr.Modes().BracketedPaste
	keepStreamMouse(&st, n.Scr.Modes()) // nor for X10 tracking and urxvt
	if err := n.Scr.Seed(st); err != nil {
		return fmt.Errorf("seed mirror of %s: %w", n.Meta.ID, err)
	}
	n.dropUntil = marks[n.Pane]
	n.applied = max(n.applied, n.dropUntil)
	n.stale = false
	n.lastSeed = time.Now()
	n.Asleep.Store(false)
	newPid := pid > 0 && pid != n.Pid()
	n.setPid(pid)
	n.Mu.Lock()
	n.Reseeds++
	n.seedRev = n.Scr.Revision()
	defer n.evalScans() // after the status, below
	pending := n.pendingExit
	n.pendingExit = nil
	n.Mu.Unlock()
	if newPid && !dead {
		n.watchProcess(pid)
	}
	if !dead && pending != nil {
		// The process watcher saw the end before tmux did (exitcheck.go).
		dead, code = n.confirmExit(*pending)
	}
	if dead {
		n.Log.Debug("exit published by a seed", "code", code, "reported", pending != nil, "blank", len(n.excerpt(1)) == 0, "mark", n.dropUntil)
		if n.deadSeeds < maxDeadSeeds && len(n.excerpt(1)) == 0 {
			// tmux 3.3a may mark a pane dead before it has read the
			// program's last output from the pty: look again, later
			// each time, while the mirror shows nothing.
			n.deadSeeds++
			time.AfterFunc(deadReseed<<(n.deadSeeds-1), n.RequestReseed)
		}
		n.recordCrash(ctx, code) // before the exit is published: waiters see it
		n.SetStatus(tools.StatusExited, &code)
	}
	return nil
}

func (n *Node) reseedLogged(why string) {
	if err := n.reseed(context.Background()); err != nil {
		n.Log.Warn("reseed failed", "why", why, "err", err)
	}
}
