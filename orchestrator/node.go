package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/tmuxctl"
)

// Node status values (terminal_list, terminal_snapshot).
const (
	StatusRunning = "running"
	StatusExited  = "exited"
)

// NodeMeta is what the orchestrator keeps about a node on disk
// (<state>/nodes/<id>.json), so a restarted orchestrator knows who owns it.
type NodeMeta struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Command []string  `json:"command"`
	Cwd     string    `json:"cwd"`
	Owner   string    `json:"owner"`            // launching node id, or "operator"
	Parent  string    `json:"parent,omitempty"` // launching node id when a node launched it
	Agent   string    `json:"agent,omitempty"`  // agent kind for agent nodes
	Created time.Time `json:"created"`
}

// input is text sent to a node, kept so a text wait is never satisfied by
// the terminal's echo of it.
type input struct {
	rev  uint64 // the node's revision just before it was sent
	text string
}

// maxInputs bounds the inputs kept per node for echo masking.
const maxInputs = 64

// node is one terminal: one tmux session, its control client, its mirror.
type node struct {
	meta   NodeMeta
	o      *Orchestrator
	client *tmuxctl.Client
	pane   string
	stream *tmuxctl.PaneStream
	scr    *screen.Screen
	log    *slog.Logger

	reseedReq chan struct{} // capacity 1
	wakeReq   chan chan struct{}
	quit      chan struct{}
	done      chan struct{} // closed when pump returns

	// dropUntil is the pane stream position up to which output is already
	// in the mirror (set by a seed); applied is the position of the last
	// byte applied. Only the pump goroutine touches them.
	dropUntil uint64
	applied   uint64
	stale     bool      // text was logged but not emulated: reseed before use
	lastSeed  time.Time // when the mirror was last seeded

	// A node nobody observes sleeps: tmux stops sending its output to us
	// and its emulator is released (see pump and observe). asleep changes
	// only in the pump; observers and lastObserved are set by operations.
	asleep       atomic.Bool
	observers    atomic.Int32 // waits in progress
	lastObserved atomic.Int64 // unix nanoseconds

	mu          sync.Mutex // guards the fields below
	status      string
	exitCode    *int
	pid         int
	statusCh    chan struct{} // closed when status changes
	inputs      []input
	gone        bool   // the tmux session no longer exists
	reseeds     int    // how often the mirror was reseeded (observability)
	seedRev     uint64 // the mirror's revision right after the last seed
	healed      int    // how often a quiet check found the mirror wrong
	pendingExit *int   // exit reported by requestExit, published after a reseed
	// edgeRev is a revision at which tmux reported the cursor one past the
	// last column (a pending wrap that x/vt does not show, e.g. with
	// autowrap off); the snapshot of that revision reports it as tmux does.
	edgeRev uint64
}

func (n *node) session() string { return "ts-" + n.meta.ID }

// state returns status, exit code and whether the session is gone.
func (n *node) state() (string, *int, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.status, n.exitCode, n.gone
}

func (n *node) statusWait() (string, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.status, n.statusCh
}

func (n *node) setStatus(status string, code *int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.status == status && (code == nil || (n.exitCode != nil && *n.exitCode == *code)) {
		return
	}
	n.status = status
	if code != nil {
		c := *code
		n.exitCode = &c
	}
	close(n.statusCh)
	n.statusCh = make(chan struct{})
}

// watchProcess asks the orchestrator's process watcher to tell when the
// pane's program ends; its status is then read from /proc if tmux has not
// reaped it, or tmux's pane-died hook follows.
func (n *node) watchProcess(pid int) {
	if n.o.procs == nil {
		return
	}
	err := n.o.procs.watch(pid, func() {
		if code, ok := zombieStatus(pid); ok {
			n.requestExit(code)
			return
		}
		select {
		case n.o.srv.deaths <- struct{}{}:
		default:
		}
	})
	if err != nil {
		n.log.Debug("cannot watch the pane's process", "pid", pid, "err", err)
	}
}

// requestExit records that tmux reported the pane dead. The pump reseeds
// first and then publishes the status, so whoever wakes on the exit sees
// the program's final screen: tmux 3.3a can drop a dying pane's last
// output for control clients, so that screen is taken from tmux itself.
func (n *node) requestExit(code int) {
	n.mu.Lock()
	n.pendingExit = &code
	n.mu.Unlock()
	n.requestReseed()
}

func (n *node) markGone() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.gone {
		return
	}
	n.gone = true
	if n.status != StatusExited {
		n.status = StatusExited
	}
	close(n.statusCh)
	n.statusCh = make(chan struct{})
}

func (n *node) recordInput(rev uint64, text string) {
	if text == "" {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.inputs = append(n.inputs, input{rev: rev, text: text})
	if len(n.inputs) > maxInputs {
		n.inputs = append([]input(nil), n.inputs[len(n.inputs)-maxInputs:]...)
	}
}

// inputsSince returns the texts sent at or after revision rev.
func (n *node) inputsSince(rev uint64) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, in := range n.inputs {
		if in.rev >= rev {
			out = append(out, in.text)
		}
	}
	return out
}

// attach starts the node's control client and its pump, and seeds the
// mirror before returning.
func (n *node) attach(ctx context.Context) error {
	o := n.o
	c, err := tmuxctl.Start(ctx, tmuxctl.Config{
		Tmux: o.cfg.Tmux, Socket: o.cfg.Socket, ConfigFile: o.srv.conf,
		Args: []string{"attach-session", "-t", "=" + n.session()},
	})
	if err != nil {
		return fmt.Errorf("attach control client to %s: %w", n.session(), err)
	}
	out, err := c.Run(ctx, tmuxctl.Command("display-message", "-p", "-t", "="+n.session()+":", "#{pane_id} #{pane_width} #{pane_height}"))
	if err != nil || len(out) != 1 {
		c.Close()
		return fmt.Errorf("find pane of %s: %v", n.session(), err)
	}
	f := strings.Fields(out[0])
	if len(f) != 3 {
		c.Close()
		return fmt.Errorf("find pane of %s: unexpected %q", n.session(), out[0])
	}
	cols, _ := strconv.Atoi(f[1])
	rows, _ := strconv.Atoi(f[2])
	n.client = c
	n.pane = f[0]
	n.stream = c.Pane(n.pane)
	n.scr = screen.New(max(cols, 1), max(rows, 1))
	// Fall behind for more than a few seconds and tmux pauses the pane
	// rather than stalling the program; the pump then reseeds.
	if err := c.SetPauseAfter(ctx, 5*time.Second); err != nil {
		n.log.Debug("pause-after not set", "err", err)
	}
	if err := n.reseed(ctx); err != nil {
		c.Close()
		n.scr.Close()
		return err
	}
	go n.pump()
	return nil
}

// seedFormat is read in the same command line as capture-pane.
const seedFormat = "#{pane_width} #{pane_height} #{cursor_x} #{cursor_y} #{cursor_flag} #{alternate_on} " +
	"#{keypad_cursor_flag} #{mouse_standard_flag}#{mouse_button_flag}#{mouse_any_flag} #{mouse_sgr_flag} " +
	"#{scroll_region_upper} #{scroll_region_lower} #{alternate_saved_x} #{alternate_saved_y} " +
	deadFormat + " #{pane_pid} #{pane_title}"

// deadFormat reads a pane's death as one word: dead flag, exit status and
// signal, e.g. "1:7:" or "1::9" or "0::".
const deadFormat = "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}"

// parseDead interprets deadFormat. A pane whose pty closed before tmux
// collected the child's status is dead but not ready: its status will
// follow (the pane-died hook fires again), so it is not reported yet.
func parseDead(word string) (exited bool, code int) {
	f := strings.Split(word, ":")
	if len(f) != 3 || f[0] != "1" {
		return false, 0
	}
	if v, err := strconv.Atoi(f[1]); err == nil {
		return true, v
	}
	if v, err := strconv.Atoi(f[2]); err == nil {
		return true, 128 + v
	}
	return false, 0
}

// parseSeed turns the display-message line into a SeedState plus the
// pane's dead flag and exit status (see checkDead) and pid.
func parseSeed(line string) (st screen.SeedState, dead bool, status, pid int, err error) {
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
	st.Mouse = strings.Contains(f[7], "1")
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
	dead, status = checkDead(f[13], pid)
	st.Title = f[15]
	return st, dead, status, pid, err
}

// reseed reads tmux's view of the pane in one command line and replaces
// the mirror with it; output up to the reply is dropped from the stream.
// Only the pump goroutine (or attach, before the pump starts) calls it.
func (n *node) reseed(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmds := []string{
		tmuxctl.Command("display-message", "-p", "-t", n.pane, seedFormat),
		tmuxctl.Command("capture-pane", "-p", "-e", "-N", "-t", n.pane),
		tmuxctl.Command("capture-pane", "-p", "-e", "-N", "-a", "-t", n.pane),
	}
	if n.asleep.Load() {
		// Output back on first: what follows the seed's mark is applied.
		if err := n.client.SetPaneOutput(ctx, n.pane, true); err != nil {
			return fmt.Errorf("wake pane %s: %w", n.pane, err)
		}
	}
	outs, marks, err := n.client.RunManyMarked(ctx, cmds...)
	// The last command fails when there is no alternate screen: expected.
	var ce *tmuxctl.CommandError
	if err != nil && !(errors.As(err, &ce) && ce.Index == 2 && len(outs) == 2) {
		return fmt.Errorf("read pane %s for seeding: %w", n.pane, err)
	}
	if len(outs[0]) != 1 {
		return fmt.Errorf("read pane %s for seeding: unexpected %q", n.pane, outs[0])
	}
	st, dead, code, pid, perr := parseSeed(outs[0][0])
	if perr != nil {
		return perr
	}
	st.Lines = outs[1]
	if st.AltScreen && len(outs) == 3 {
		st.PrimaryLines = outs[2]
	}
	// tmux 3.3a has no format for bracketed paste: keep what the stream
	// told the mirror.
	st.BracketedPaste = n.scr.Modes().BracketedPaste
	if err := n.scr.Seed(st); err != nil {
		return fmt.Errorf("seed mirror of %s: %w", n.meta.ID, err)
	}
	n.dropUntil = marks[n.pane]
	n.applied = max(n.applied, n.dropUntil)
	n.stale = false
	n.lastSeed = time.Now()
	n.asleep.Store(false)
	n.mu.Lock()
	n.reseeds++
	n.seedRev = n.scr.Revision()
	newPid := pid > 0 && pid != n.pid
	n.pid = pid
	pending := n.pendingExit
	n.pendingExit = nil
	n.mu.Unlock()
	if newPid && !dead {
		n.watchProcess(pid)
	}
	if !dead && pending != nil {
		dead, code = true, *pending
	}
	if dead {
		n.setStatus(StatusExited, &code)
	}
	return nil
}

// checkDead interprets tmux's dead word for a pane. tmux 3.3a sometimes
// leaves the child unreaped after the pty closed: it then has no status
// and fires no pane-died hook, so the status is read from /proc instead.
// The quiet-time check (heal) and every seed call this, so a program that
// printed anything before it exited is noticed even then.
func checkDead(word string, pid int) (bool, int) {
	if exited, code := parseDead(word); exited {
		return true, code
	}
	if strings.HasPrefix(word, "1:") && pid > 0 {
		if code, ok := zombieStatus(pid); ok {
			return true, code
		}
	}
	return false, 0
}

// Output handling: slices applied to the emulator at once; the amount
// taken in one go that counts as a burst (logged as text, screen reseeded
// from tmux instead of emulated); how often a burst reseeds.
const (
	applySlice  = 32 << 10
	burstBytes  = 64 << 10
	burstReseed = 250 * time.Millisecond
)

// snapshot is the mirror's snapshot, with the cursor as tmux reports it
// at the right edge (see edgeRev).
func (n *node) snapshot() screen.Snapshot {
	snap := n.scr.Snapshot()
	n.mu.Lock()
	edge := n.edgeRev
	n.mu.Unlock()
	if edge != 0 && edge == snap.Revision && snap.Cursor.X == snap.Columns-1 {
		snap.Cursor.X = snap.Columns
	}
	return snap
}

// requestReseed asks the pump to reseed (it coalesces requests).
func (n *node) requestReseed() {
	select {
	case n.reseedReq <- struct{}{}:
	default:
	}
}

// pump applies the pane's output to the mirror and reacts to the client's
// notifications. It is the only goroutine that writes to the mirror.
func (n *node) pump() {
	defer close(n.done)
	events := n.client.Events()
	// heal fires once the node has been quiet for healQuiet after output:
	// the mirror is then compared with tmux and reseeded if it differs.
	heal := time.NewTimer(time.Hour)
	heal.Stop()
	defer heal.Stop()
	// doze fires when the node may have gone unobserved for IdleAfter.
	idle := n.o.cfg.IdleAfter
	doze := time.NewTimer(time.Hour)
	doze.Stop()
	defer doze.Stop()
	arm := func() {
		if idle > 0 {
			doze.Reset(idle)
		}
	}
	arm()
	for {
		select {
		case <-n.quit:
			return
		case <-n.stream.Ready():
			n.apply(n.stream.Take())
			heal.Reset(healQuiet)
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			n.event(ev)
		case <-n.reseedReq:
			n.reseedLogged("requested")
			arm()
		case done := <-n.wakeReq:
			if n.asleep.Load() {
				n.reseedLogged("observed")
			}
			close(done)
			arm()
		case <-doze.C:
			since := time.Since(time.Unix(0, n.lastObserved.Load()))
			if n.observers.Load() == 0 && since >= idle {
				n.sleep()
			} else {
				doze.Reset(max(idle-since, time.Second))
			}
		case <-heal.C:
			n.heal()
		case <-n.client.Done():
			// Apply what arrived before the end.
			n.apply(n.stream.Take())
			n.o.clientEnded(n)
			return
		}
	}
}

// sleep stops tmux sending the pane's output to us and releases the
// emulator; the published screen stays readable. The next observation or
// reseed wakes the node (output back on, then a race-free seed). Only the
// pump calls it.
func (n *node) sleep() {
	if n.asleep.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.client.SetPaneOutput(ctx, n.pane, false); err != nil {
		n.log.Debug("cannot turn pane output off", "err", err)
		return
	}
	n.scr.Sleep()
	n.stale = false
	n.asleep.Store(true)
	n.log.Debug("node asleep: nobody observes it")
}

// observe marks the node observed now and, if it sleeps, wakes it and
// waits until its mirror is fresh again.
func (n *node) observe(ctx context.Context) {
	n.lastObserved.Store(time.Now().UnixNano())
	if !n.asleep.Load() {
		return
	}
	done := make(chan struct{})
	select {
	case n.wakeReq <- done:
	case <-n.done:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-n.done:
	case <-ctx.Done():
	}
}

// healQuiet is how long a node must be quiet before its mirror is checked
// against tmux.
const healQuiet = 150 * time.Millisecond

// heal compares the mirror with tmux's own rows and cursor (one control
// round trip) and reseeds it when they differ: x/vt diverges from tmux in
// places (wide characters at the right edge, some line operations), and a
// quiet node's snapshot must be exact. Only the pump goroutine calls it.
func (n *node) heal() {
	if n.asleep.Load() {
		return
	}
	if n.stale {
		n.reseedLogged("burst over")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	outs, marks, err := n.client.RunManyMarked(ctx,
		tmuxctl.Command("display-message", "-p", "-t", n.pane, "#{cursor_x} #{cursor_y} #{pane_width} #{pane_height} "+deadFormat+" #{pane_pid}"),
		tmuxctl.Command("capture-pane", "-p", "-t", n.pane))
	if err != nil || len(outs) != 2 || len(outs[0]) != 1 {
		n.log.Debug("heal: no answer", "err", err)
		return
	}
	if marks[n.pane] != n.applied || n.stream.Pending() {
		n.log.Debug("heal: output pending", "mark", marks[n.pane], "applied", n.applied)
		return // more output is on its way: check when it is quiet again
	}
	var cx, cy, w, h, pid int
	var dead string
	fmt.Sscanf(outs[0][0], "%d %d %d %d %s %d", &cx, &cy, &w, &h, &dead, &pid)
	if exited, code := checkDead(dead, pid); exited {
		if status, _, _ := n.state(); status != StatusExited {
			n.requestExit(code) // reseeds, then publishes the exit
			n.reseedLogged("exit")
			return
		}
	}
	snap := n.snapshot()
	edge := cx == w && snap.Cursor.X == w-1
	same := snap.Columns == w && snap.Rows == h && snap.Cursor.Y == cy && (snap.Cursor.X == cx || edge)
	for i := 0; same && i < h; i++ {
		var want, got string
		if i < len(outs[1]) {
			want = strings.TrimRight(outs[1][i], " ")
		}
		if i < len(snap.Lines) {
			got = snap.Lines[i]
		}
		same = want == got
	}
	if same {
		if edge {
			n.mu.Lock()
			n.edgeRev = snap.Revision
			n.mu.Unlock()
		}
		return
	}
	n.mu.Lock()
	n.healed++
	n.mu.Unlock()
	n.log.Debug("mirror differed from tmux; reseeding")
	n.reseedLogged("heal")
}

func (n *node) reseedLogged(why string) {
	if err := n.reseed(context.Background()); err != nil {
		n.log.Warn("reseed failed", "why", why, "err", err)
	}
}

func (n *node) apply(ch tmuxctl.Chunk) {
	if ch.Paused {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n.client.Continue(ctx, n.pane)
		cancel()
		n.reseedLogged("paused")
		return
	}
	n.applied = ch.Total
	if n.asleep.Load() {
		// Output that crossed the switch-off: keep its text only.
		n.scr.LogText(ch.Data)
		return
	}
	if ch.Lost {
		n.reseedLogged("backlog")
		return
	}
	data := ch.Data
	start := ch.Total - uint64(len(data))
	if start < n.dropUntil {
		skip := n.dropUntil - start
		if skip >= uint64(len(data)) {
			return
		}
		data = data[skip:]
	}
	if len(data) == 0 {
		return
	}
	if n.stale || len(data) > burstBytes {
		// A burst (a flood, a large redraw): scrolling the emulator
		// through all of it costs more CPU than tmux spends producing it.
		// Log the text (waits see it), and take the screen from tmux
		// every burstReseed during the burst, and once when output has
		// been quiet for healQuiet (heal ends the burst).
		n.scr.LogText(data)
		n.stale = true
		if time.Since(n.lastSeed) >= burstReseed {
			n.reseedLogged("burst")
			n.stale = true // still in the burst until output goes quiet
		}
		return
	}
	// Apply in slices so the revision moves and waiters wake during a
	// large write instead of after it.
	for len(data) > 0 {
		k := min(len(data), applySlice)
		if err := n.scr.Write(data[:k]); err != nil {
			n.reseedLogged("emulator: " + err.Error())
			return
		}
		data = data[k:]
	}
}

func (n *node) event(ev tmuxctl.Event) {
	switch e := ev.(type) {
	case tmuxctl.LayoutChange:
		for _, p := range e.Panes {
			if p.Pane == n.pane {
				// tmux reflows on resize without sending output: reseed.
				n.reseedLogged("layout-change")
			}
		}
	}
}
