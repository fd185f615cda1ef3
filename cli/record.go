package cli

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/termsprawl/termsprawl/orchestrator/record"
	"github.com/termsprawl/termsprawl/tools"
)

// Recordings for humans (CONTRACT §13, §18): `termsprawl record NODE`
// turns a node's recording on or off; `termsprawl replay PATH|NODE|latest`
// plays a recording in this terminal, without the orchestrator
// (recordings.go finds them).

type recordCmd struct {
	Off  bool `name:"off" help:"Stop recording the node instead."`
	JSON bool `name:"json" help:"Print terminal_record's receipt as JSON."`
	nodeArg
}

func (recordCmd) Examples() string {
	return `termsprawl record build                    # record node build into <state>/traces/build-<UTC time>/
termsprawl record --off build              # stop; the recording stays where it was
termsprawl replay ~/.local/state/termsprawl/traces/build-20261201T101500Z`
}

type replayCmd struct {
	Speed   float64       `name:"speed" default:"1" help:"Play this many times faster (0.1 to 1000; default 1: real time)."`
	MaxWait time.Duration `name:"max-wait" help:"Cut every pause longer than this (e.g. 2s; default: keep pauses as recorded)."`
	Path    string        `arg:"" name:"PATH|NODE|latest" help:"A recording: its directory, a .zip of one or a .cast file; a node (its newest recording); or latest (the newest of all, see termsprawl recordings)."`
}

func (replayCmd) Examples() string {
	return `termsprawl replay latest                   # the newest recording (termsprawl recordings lists them)
termsprawl replay build                    # the newest recording of node build
termsprawl replay ~/.local/state/termsprawl/traces/build-20261201T101500Z
termsprawl replay --speed 4 --max-wait 1s build.zip`
}

// recordNode runs terminal_record for `termsprawl record`: one line
// saying what changed (CONTRACT §18), the receipt with --json. Stopping a
// node that is not recorded says so plainly and exits 0.
func (h *human) recordNode(word string, off, asJSON bool) int {
	n, code := h.findNode(word)
	if code != ExitOK {
		return code
	}
	was := n.Recording != nil
	return mutate(h, "terminal_record", map[string]any{"terminal": n.Terminal, "on": !off}, asJSON, func(r tools.RecordResult) {
		id := cmp.Or(r.Terminal, n.Terminal)
		switch {
		case r.Recording && was:
			fmt.Fprintf(h.stdout, "node %s is already being recorded into %s (`termsprawl record --off %s` stops it)\n", id, r.Path, id)
		case r.Recording:
			fmt.Fprintf(h.stdout, "recording node %s into %s (`termsprawl record --off %s` stops it)\n", id, r.Path, id)
		case was:
			fmt.Fprintf(h.stdout, "stopped recording node %s: %s (`termsprawl replay %s` plays it)\n", id, r.Path, id)
		case r.Path != "":
			fmt.Fprintf(h.stdout, "node %s is not being recorded, so there was nothing to stop; its last recording is %s\n", id, r.Path)
		default:
			fmt.Fprintf(h.stdout, "node %s is not being recorded, so there was nothing to stop (`termsprawl record %s` starts recording it)\n", id, id)
		}
	})
}

// replay plays a recording's output in this terminal at its recorded pace
// (divided by speed). Ctrl-C stops it and restores the terminal.
func (h *human) replay(c replayCmd) int {
	if c.Speed < 0.1 || c.Speed > 1000 {
		return usageError(h.stderr, humanName, fmt.Errorf("--speed %g: give a factor from 0.1 to 1000", c.Speed), "termsprawl replay --speed 2 "+c.Path)
	}
	path, err := h.replayTarget(c.Path)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n", h.prefix(), err)
		return ExitNo
	}
	c.Path = path
	t, err := record.Open(c.Path)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: %v\n(give a recording directory from <state>/traces, a .zip of one, or a .cast file; `termsprawl record NODE` makes one)\n", h.prefix(), err)
		return ExitNo
	}
	defer t.Close()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt)
	defer signal.Stop(stop)
	if playCast(h.stdout, t, c.Speed, c.MaxWait, stop) {
		fmt.Fprintf(h.stderr, "\n%s: stopped\n", h.prefix())
		return 130
	}
	if m := t.Meta(); m.ExitCode != nil {
		fmt.Fprintf(h.stderr, "\n%s: the program exited with code %d (%s)\n", h.prefix(), *m.ExitCode, filepath.Base(c.Path))
	}
	return ExitOK
}

// resetTerminal leaves the alternate screen, shows the cursor and resets
// colours, for a replay cut short.
const resetTerminal = "\x1b[0m\x1b[?1049l\x1b[?25h\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l"

// playCast writes the trace's output events to w with their recorded
// pauses divided by speed (each cut to maxWait when it is set). It
// returns true when stop fired first.
func playCast(w io.Writer, t *record.Trace, speed float64, maxWait time.Duration, stop <-chan os.Signal) (stopped bool) {
	var last int64
	timer := time.NewTimer(0)
	<-timer.C
	for ev := range t.Events() {
		if ev.Code != "o" {
			continue
		}
		d := time.Duration(float64(ev.TimeUS-last) * float64(time.Microsecond) / speed)
		if maxWait > 0 && d > maxWait {
			d = maxWait
		}
		last = ev.TimeUS
		if d > time.Millisecond {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-stop:
				io.WriteString(w, resetTerminal)
				return true
			}
		}
		io.WriteString(w, ev.Data)
	}
	return false
}
