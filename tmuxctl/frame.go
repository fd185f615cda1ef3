package tmuxctl

import (
	"bytes"
	"strings"
)

// guard is the (time, number, flags) triple of %begin/%end/%error.
type guard struct{ time, number, flags string }

// ours reports whether the block answers a command this client sent: tmux
// sets bit 0 of flags for commands read from the control client, and 0 for
// blocks of hooks and of the attach command itself.
func (g guard) ours() bool {
	n := len(g.flags)
	return n > 0 && (g.flags[n-1]-'0')&1 == 1
}

// reply is one complete %begin … %end|%error block.
type reply struct {
	guard
	lines []string
	err   bool
}

// sink receives what the framer finds in the stream.
type sink interface {
	// output receives a pane's payload still escaped as tmux sent it
	// (decode with AppendDecoded); both slices are only valid during the
	// call.
	output(pane, escaped []byte)
	event(ev Event)
	reply(r reply)   // a block answering one of our commands
	foreign(r reply) // any other block (the start command's, a hook's)
	// stray receives a non-empty line outside any block that is not
	// protocol (tmux prints a sourced file's parse errors that way); only
	// valid during the call.
	stray(line []byte)
}

// framer splits the control-mode line stream into replies, output and
// notifications. It is pure: no I/O, no goroutines.
//
// Inside a block answering one of our commands every line is content until
// the %end/%error with the same time, number and flags, so pane text that
// looks like protocol ("%end 1 2 1", "%exit") stays content. tmux writes a
// synchronous command's block in one piece, and termsprawl sends no
// commands that wait for a person (prompts, menus). Inside a foreign block
// (a hook's) output and notification lines are still dispatched, since
// such blocks may stay open across the event loop.
//
// The framer does not decide which command a block answers. Commands that
// make tmux run more commands right after them (source-file, if-shell,
// run-shell -C) get one block per inserted command, with flags 1 like
// ours and numbers from tmux's global counter (shared by every client and
// with gaps), so nothing in the guard tells them apart; the Client pairs
// them with a marker command (see request.sync).
type framer struct {
	open   *reply
	ignore int // lines outside any block that are not protocol (counted, dropped)
}

func parseGuard(rest string) (guard, bool) {
	f := strings.Split(rest, " ")
	if len(f) != 3 {
		return guard{}, false
	}
	for _, s := range f {
		if s == "" || len(s) > 20 {
			return guard{}, false
		}
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return guard{}, false
			}
		}
	}
	return guard{f[0], f[1], f[2]}, true
}

func (f *framer) line(l []byte, s sink) {
	if f.open != nil {
		if bytes.HasPrefix(l, []byte("%end ")) || bytes.HasPrefix(l, []byte("%error ")) {
			isErr := l[2] == 'r'
			rest := string(l[len("%end "):])
			if isErr {
				rest = string(l[len("%error "):])
			}
			if g, ok := parseGuard(rest); ok && g == f.open.guard {
				r := *f.open
				r.err = isErr
				f.open = nil
				if r.ours() {
					s.reply(r)
				} else {
					s.foreign(r)
				}
				return
			}
		}
		if !f.open.ours() && len(l) > 0 && l[0] == '%' && !bytes.HasPrefix(l, []byte("%begin ")) &&
			!bytes.HasPrefix(l, []byte("%end ")) && !bytes.HasPrefix(l, []byte("%error ")) {
			f.dispatch(l, s)
			return
		}
		f.open.lines = append(f.open.lines, string(l))
		return
	}
	if bytes.HasPrefix(l, []byte("%begin ")) {
		if g, ok := parseGuard(string(l[len("%begin "):])); ok {
			f.open = &reply{guard: g}
			return
		}
	}
	if len(l) == 0 || l[0] != '%' {
		f.ignore++
		if len(l) > 0 {
			s.stray(l)
		}
		return
	}
	f.dispatch(l, s)
}

// dispatch handles an output or notification line.
func (f *framer) dispatch(l []byte, s sink) {
	switch {
	case bytes.HasPrefix(l, []byte("%output ")):
		rest := l[len("%output "):]
		pane, data, ok := bytes.Cut(rest, []byte(" "))
		if !ok {
			pane, data = rest, nil
		}
		if len(pane) == 0 || pane[0] != '%' {
			f.ignore++
			return
		}
		s.output(pane, data)
	case bytes.HasPrefix(l, []byte("%extended-output ")):
		// %extended-output %P AGE [RESERVED…] : DATA
		rest := l[len("%extended-output "):]
		pane, tail, ok := bytes.Cut(rest, []byte(" "))
		if !ok || len(pane) == 0 || pane[0] != '%' {
			f.ignore++
			return
		}
		idx := bytes.Index(tail, []byte(" : "))
		var data []byte
		switch {
		case idx >= 0:
			data = tail[idx+3:]
		case bytes.HasSuffix(tail, []byte(" :")):
			data = nil
		default:
			f.ignore++
			return
		}
		s.output(pane, data)
	case bytes.HasPrefix(l, []byte("%begin ")), bytes.HasPrefix(l, []byte("%end ")), bytes.HasPrefix(l, []byte("%error ")),
		string(l) == "%output", string(l) == "%extended-output":
		// A stray guard outside a block or an output line without a pane:
		// malformed, not a notification.
		f.ignore++
	default:
		s.event(parseNotification(string(l)))
	}
}
