package hosts

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// DeathWatch reacts to the pane-died hook of every server: it reads
// every pane's dead flag in one command per server and hands the lines to
// Handle (the engine's, which knows the nodes). Run is its goroutine.
type DeathWatch struct {
	Deaths chan struct{}   // the pane-died hook's kicks (capacity 1)
	Stop   <-chan struct{} // Run returns once it is closed
	Shards *Shards
	Hosts  *Set
	// Handle updates the nodes from one server's list-panes lines; it
	// reports whether a dead pane's status is not known yet.
	Handle func(lines []string) (notReady bool)
	// BeginOp counts a host's list in the engine's ops (false once the
	// engine is closing: no list), EndOp ends it.
	BeginOp func() bool
	EndOp   func()
	// BeforeList, if set, runs before one server's list-panes (the
	// engine's test seam).
	BeforeList func(srv *Tmux)
	Log        *slog.Logger
}

// Run waits for deaths until Stop: the hook does not say which server
// fired, so every shard's and host's panes are read, each server's answer
// handled as soon as it arrives; a dead pane whose status is not known
// yet is looked at again shortly (the status follows the pty's end).
func (w *DeathWatch) Run() {
	retry := 0
	for {
		select {
		case <-w.Stop:
			return
		case <-w.Deaths:
		}
		var notReadyAny atomic.Bool
		w.listAll(func(out []string) {
			if w.Handle(out) {
				notReadyAny.Store(true)
			}
		})
		notReady := notReadyAny.Load()
		if notReady && retry < 8 {
			retry++
			time.AfterFunc(time.Duration(10<<retry)*time.Millisecond, w.kick)
		} else if !notReady {
			retry = 0
		}
	}
}

func (w *DeathWatch) kick() {
	select {
	case w.Deaths <- struct{}{}:
	default:
	}
}

// listAll lists the panes of every shard and host at once, each server
// with its own timeout, and gives each server's lines to handle as they
// arrive (concurrently); a server that fails is logged and left out. It
// returns when every shard of this machine answered or timed out; a
// host's answer is not waited for (CONTRACT §23: a slow host never delays
// exit detection here): it is handled by listHost when it comes, with at
// most one list in flight per host.
func (w *DeathWatch) listAll(handle func([]string)) {
	for _, srv := range w.Hosts.Servers() {
		w.listHost(srv)
	}
	var wg sync.WaitGroup
	for _, srv := range w.Shards.List() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if lines, ok := w.list(srv); ok {
				handle(lines)
			}
		}()
	}
	wg.Wait()
}

// list is one server's panes with their dead flags.
func (w *DeathWatch) list(srv *Tmux) ([]string, bool) {
	if w.BeforeList != nil {
		w.BeforeList(srv)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lines, err := ListPanes(ctx, srv)
	if err != nil {
		w.Log.Warn("list panes after a pane died", "socket", srv.Socket(), "err", err)
		return nil, false
	}
	return lines, true
}

// listHost lists a host's panes in the background and hands them over; a
// list already in flight for the host is not doubled (the death that
// asked is in the lines it will read, or asks again: again is set). A
// dead pane whose status is not known yet is looked at again shortly.
func (w *DeathWatch) listHost(srv *Tmux) {
	if !w.Hosts.BeginListing(srv) {
		return
	}
	if !w.BeginOp() {
		w.Hosts.DropListing(srv)
		return
	}
	go func() { // one host's pane list (owner: the death watcher; counted in the engine's ops)
		defer w.EndOp()
		for {
			if lines, ok := w.list(srv); ok && w.Handle(lines) {
				time.AfterFunc(100*time.Millisecond, w.kick)
			}
			if !w.Hosts.EndListing(srv) {
				return
			}
		}
	}()
}
