package notify

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/termsprawl/termsprawl/tools"
)

// The bytes the engine sends to the humans' tmux clients and terminals
// (its NotifyHumans and NotifyTerminals): a one-line status message and
// a write to a client's tty.

// MaxStatusRunes bounds one message: it is one line of a status bar.
const MaxStatusRunes = 200

// StatusText makes msg one safe tmux status line (the engine's
// NotifyHumans): one line, at most MaxStatusRunes, `#` doubled so tmux
// shows it instead of expanding formats.
// Line breaks and tabs become spaces; every other control is made
// visible (tools.VisibleLine, CONTRACT §26).
func StatusText(msg string) string {
	msg = tools.VisibleLine(strings.Join(strings.Fields(msg), " "))
	if r := []rune(msg); len(r) > MaxStatusRunes {
		// Cut in the middle: a message ends with what matters (a
		// command's tail, how to answer).
		head := (MaxStatusRunes - 1) / 3
		msg = string(r[:head]) + "…" + string(r[len(r)-(MaxStatusRunes-1-head):])
	}
	return strings.ReplaceAll(msg, "#", "##")
}

// WriteTTY writes b to a terminal device without making it this
// process's controlling terminal and without blocking on a stuck one.
func WriteTTY(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOCTTY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("open the client's terminal: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return fmt.Errorf("%s is not a terminal", path)
	}
	if _, err := f.Write(b); err != nil {
		return fmt.Errorf("write to the client's terminal %s: %w", path, err)
	}
	return nil
}
