package monitor

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/orchestrator/screen"
)

// receiver applies screen events as the page and the dashboard do (full
// frames, scrolls, changed lines).
type receiver struct {
	rows  []string // each row's runs, as JSON
	lines int      // lines received in all
}

func (r *receiver) apply(t *testing.T, data []byte) screenMsg {
	t.Helper()
	var msg screenMsg
	if err := json.Unmarshal(data, &msg); err != nil {
		t.Fatalf("screen event %s: %v", data, err)
	}
	if msg.Full {
		if msg.Scroll != 0 {
			t.Fatalf("a full frame with a scroll: %s", data)
		}
		r.rows = make([]string, msg.Rows)
	}
	if k := msg.Scroll; k > 0 {
		r.rows = append(r.rows[min(k, len(r.rows)):], make([]string, min(k, len(r.rows)))...)
	}
	for _, raw := range msg.Lines {
		var l struct {
			Y int             `json:"y"`
			R json.RawMessage `json:"r"`
		}
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		r.rows[l.Y] = string(l.R)
		r.lines++
	}
	return msg
}

// Through a real mirror, every frame's event — scrolls by one and by more
// than maxScroll, a status line redrawn in place, colours, a clear —
// brings a receiver to exactly the full frame a new page gets, and a
// scrolling screen costs its new rows, not the whole screen.
func TestWatcherScrollFrames(t *testing.T) {
	t.Parallel()
	s := screen.New(30, 6)
	defer s.Close()
	w := newWatcher(&hub{}, "n")
	c := &client{out: make(chan []byte, 64), dead: make(chan struct{})}
	w.subs[c] = true
	enc := newEncoder()
	var m memo
	sh := screenShown{s, &screen.Frames{}}
	write := func(out string) {
		if err := s.Write([]byte(out)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 6 {
		write(fmt.Sprintf("\x1b[3%dmline %d\x1b[0m\r\n", i%8, i))
	}
	rev, _ := sh.Changed()
	w.update(enc, &m, sh, rev, true)
	var r receiver
	r.apply(t, w.full())

	steps := []struct {
		name   string
		out    string
		scroll int
		lines  int // at most this many lines sent
	}{
		{"one line scrolls", "\x1b[35mline 6\x1b[0m\r\n", 1, 2},
		{"another", "line 7\r\n", 1, 2},
		{"three at once", "line 8\r\nline 9\r\nline 10\r\n", 3, 4},
		{"a status line in place", "\x1b[6;1H\x1b[7m status \x1b[0m", 0, 1},
		{"ten at once: no scroll to reuse", strings.Repeat("x\r\n", 10), 0, 6},
		{"clear", "\x1b[2J\x1b[H", 0, 6},
		{"cursor only", "\x1b[3;4H", 0, 2},
	}
	for _, st := range steps {
		write(st.out)
		rev, _ := sh.Changed()
		w.update(enc, &m, sh, rev, false)
		var data []byte
		select {
		case ev := <-c.out:
			_, after, _ := bytes.Cut(ev, []byte("data: "))
			data = bytes.TrimSpace(after)
		default:
			t.Fatalf("%s: no event", st.name)
		}
		before := r.lines
		msg := r.apply(t, data)
		if msg.Scroll != st.scroll {
			t.Errorf("%s: scroll %d, want %d", st.name, msg.Scroll, st.scroll)
		}
		if n := r.lines - before; n > st.lines {
			t.Errorf("%s: %d lines sent, want at most %d", st.name, n, st.lines)
		}
		var fresh receiver
		fresh.apply(t, w.full())
		if !slices.Equal(r.rows, fresh.rows) {
			t.Fatalf("%s: the receiver has\n%s\nthe full frame is\n%s", st.name, strings.Join(r.rows, "\n"), strings.Join(fresh.rows, "\n"))
		}
	}
}
