package node

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// Output handling: slices applied to the emulator at once; the amount
// taken in one go that counts as a burst (logged as text, screen reseeded
// from tmux instead of emulated); how often a burst reseeds.
const (
	applySlice  = 32 << 10
	burstBytes  = 64 << 10
	burstReseed = 250 * time.Millisecond
)

// pump applies the pane's output to the mirror and reacts to the client's
// notifications. It is the only goroutine that writes to the mirror.
func (n *Node) pump() {
	defer close(n.Done)
	events := n.events
	// heal fires once the node has been quiet for healQuiet after output:
	// the mirror is then compared with tmux and reseeded if it differs.
	heal := time.NewTimer(time.Hour)
	heal.Stop()
	defer heal.Stop()
	// doze fires when the node may have gone unobserved for IdleAfter.
	idle := n.Env.Limits().IdleAfter
	doze := time.NewTimer(time.Hour)
	doze.Stop()
	defer doze.Stop()
	// rest fires when output has been quiet for RestAfter (rest.go).
	rest := time.NewTimer(time.Hour)
	if n.Env.Limits().RestAfter > 0 {
		rest.Reset(n.Env.Limits().RestAfter)
	} else {
		rest.Stop()
	}
	defer rest.Stop()
	arm := func() {
		if idle > 0 {
			doze.Reset(idle)
		}
	}
	arm()
	for {
		select {
		case <-n.Quit:
			return
		case <-n.Stream.Ready():
			n.rd.output()
			n.apply(n.Stream.Take())
			n.evalScans()
			heal.Reset(healQuiet)
			if n.Env.Limits().RestAfter > 0 {
				rest.Reset(n.Env.Limits().RestAfter)
			}
		case <-rest.C:
			n.rest()
			n.trim()
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			n.event(ev)
		case <-n.reseedReq:
			n.reseedLogged("requested")
			arm()
		case req := <-n.recReq:
			n.serveRecStart(req)
		case done := <-n.wakeReq:
			if n.Asleep.Load() || n.Scr.Asleep() {
				n.reseedLogged("observed")
				if n.Env.Limits().RestAfter > 0 {
					rest.Reset(n.Env.Limits().RestAfter)
				}
			}
			close(done)
			arm()
		case <-doze.C:
			if ok, since := n.DecideSleep(idle); ok {
				n.sleep()
			} else {
				doze.Reset(max(idle-since, time.Second))
			}
		case <-heal.C:
			n.heal()
		case <-n.clientDone:
			// Apply what arrived before the end.
			n.apply(n.Stream.Take())
			n.evalScans()
			n.Env.ClientEnded(n)
			return
		}
	}
}

// healQuiet is how long a node must be quiet before its mirror is checked
// against tmux.
const healQuiet = 150 * time.Millisecond

// heal compares the mirror with tmux's own rows and cursor (one control
// round trip) and reseeds it when they differ: x/vt diverges from tmux in
// places (wide characters at the right edge, some line operations), and a
// quiet node's snapshot must be exact. Only the pump goroutine calls it.
func (n *Node) heal() {
	if n.Asleep.Load() {
		return
	}
	if n.stale {
		n.reseedLogged("burst over")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	outs, marks, err := n.Client.RunManyMarked(ctx,
		tmuxctl.Command("display-message", "-p", "-t", n.Pane, "#{cursor_x} #{cursor_y} #{pane_width} #{pane_height} "+hosts.DeadFormat+" #{pane_pid}"),
		tmuxctl.Command("capture-pane", "-p", "-t", n.Pane))
	if err != nil || len(outs) != 2 || len(outs[0]) != 1 {
		n.Log.Debug("heal: no answer", "err", err)
		return
	}
	if marks[n.Pane] != n.applied || n.Stream.Pending() {
		n.Log.Debug("heal: output pending", "mark", marks[n.Pane], "applied", n.applied)
		return // more output is on its way: check when it is quiet again
	}
	var cx, cy, w, h, pid int
	var dead string
	fmt.Sscanf(outs[0][0], "%d %d %d %d %s %d", &cx, &cy, &w, &h, &dead, &pid)
	if exited, code := hosts.CheckDead(dead, pid, n.ZombieStatus); exited {
		if status, _, _ := n.State(); status != tools.StatusExited {
			n.RequestExit(code) // reseeds, then publishes the exit
			n.reseedLogged("exit")
			return
		}
	}
	snap := n.Snapshot()
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
			n.Mu.Lock()
			n.edgeRev = snap.Revision
			n.Mu.Unlock()
		}
		return
	}
	n.Mu.Lock()
	n.Healed++
	n.Mu.Unlock()
	n.Log.Debug("mirror differed from tmux; reseeding")
	n.reseedLogged("heal")
}

func (n *Node) apply(ch tmuxctl.Chunk) {
	if ch.Paused && (n.Asleep.Load() || n.detaching.Load()) {
		return // a pause we asked for: the wake continues it, or we leave
	}
	if ch.Paused {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		n.Client.Continue(ctx, n.Pane)
		cancel()
		n.reseedFramed("paused")
		return
	}
	n.recordOutput(ch)
	if ch.Total > n.applied {
		n.Env.Meter().Add(ch.Total - n.applied) // dropped backlog too: its buffer grew
	}
	n.applied = ch.Total
	if n.Asleep.Load() {
		// Output that crossed the switch-off: keep its text only.
		n.Scr.LogText(ch.Data)
		return
	}
	if ch.Lost {
		n.reseedFramed("backlog")
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
		n.Scr.LogText(data)
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
		if err := n.Scr.Write(data[:k]); err != nil {
			n.reseedLogged("emulator: " + err.Error())
			return
		}
		data = data[k:]
	}
	n.recordKeyframe()
}

func (n *Node) event(ev tmuxctl.Event) {
	switch e := ev.(type) {
	case tmuxctl.LayoutChange:
		for _, p := range e.Panes {
			if p.Pane == n.Pane {
				// tmux reflows on resize without sending output: reseed.
				n.reseedFramed("layout-change")
			}
		}
	}
}
