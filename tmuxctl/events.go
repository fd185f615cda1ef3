package tmuxctl

import (
	"fmt"
	"strconv"
	"strings"
)

// Event is a control-mode notification. The concrete types below cover the
// ones termsprawl acts on; every other notification arrives as Unknown,
// never as an error.
type Event interface{ eventName() string }

// PaneSize is one pane of a window layout.
type PaneSize struct {
	Pane          string // "%3"
	Width, Height int
	X, Y          int
}

// LayoutChange is %layout-change: a window's panes changed size.
type LayoutChange struct {
	Window        string // "@1"
	Layout        string
	VisibleLayout string
	Flags         string
	Panes         []PaneSize // parsed from Layout; nil if it did not parse
}

// WindowEvent is one of %window-add, %window-close, %window-renamed,
// %window-pane-changed, %unlinked-window-add, %unlinked-window-close,
// %unlinked-window-renamed.
type WindowEvent struct {
	Name   string // the notification without '%', e.g. "window-renamed"
	Window string // "@1"
	Args   []string
}

// SessionEvent is one of %session-changed, %session-renamed,
// %session-window-changed, %sessions-changed, %client-session-changed.
type SessionEvent struct {
	Name string
	Args []string
}

// PaneModeChanged is %pane-mode-changed: a pane entered or left a mode
// such as copy mode.
type PaneModeChanged struct{ Pane string }

// ClientDetached is %client-detached.
type ClientDetached struct{ Client string }

// Pause is %pause: tmux stopped sending output for the pane because this
// client fell behind (pause-after). Output in between is lost; resume with
// Client.Continue and reseed.
type Pause struct{ Pane string }

// Continue is %continue: output for the pane resumed.
type Continue struct{ Pane string }

// PasteBufferChanged is %paste-buffer-changed.
type PasteBufferChanged struct{ Buffer string }

// Exit is %exit: the stream ends. Reason is empty on a plain detach or
// kill-server.
type Exit struct{ Reason string }

// Unknown is any other notification, passed on as it came.
type Unknown struct {
	Name string // without '%'
	Line string // the whole line
}

func (LayoutChange) eventName() string       { return "layout-change" }
func (e WindowEvent) eventName() string      { return e.Name }
func (e SessionEvent) eventName() string     { return e.Name }
func (PaneModeChanged) eventName() string    { return "pane-mode-changed" }
func (ClientDetached) eventName() string     { return "client-detached" }
func (Pause) eventName() string              { return "pause" }
func (Continue) eventName() string           { return "continue" }
func (PasteBufferChanged) eventName() string { return "paste-buffer-changed" }
func (Exit) eventName() string               { return "exit" }
func (e Unknown) eventName() string          { return e.Name }

// EventName returns the notification name of e without the leading '%'.
func EventName(e Event) string { return e.eventName() }

// parseNotification turns a notification line (starting with '%', not a
// guard and not output) into an Event.
func parseNotification(line string) Event {
	name, rest, _ := strings.Cut(line[1:], " ")
	args := strings.Fields(rest)
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch name {
	case "layout-change":
		ev := LayoutChange{Window: arg(0), Layout: arg(1), VisibleLayout: arg(2), Flags: arg(3)}
		if panes, err := ParseLayout(ev.Layout); err == nil {
			ev.Panes = panes
		}
		return ev
	case "window-add", "window-close", "window-renamed", "window-pane-changed",
		"unlinked-window-add", "unlinked-window-close", "unlinked-window-renamed":
		var more []string
		if len(args) > 1 {
			// Window names may contain spaces: keep the rest as one arg.
			_, tail, _ := strings.Cut(rest, " ")
			more = []string{tail}
		}
		return WindowEvent{Name: name, Window: arg(0), Args: more}
	case "session-changed", "session-renamed", "session-window-changed", "sessions-changed", "client-session-changed":
		return SessionEvent{Name: name, Args: args}
	case "pane-mode-changed":
		return PaneModeChanged{Pane: arg(0)}
	case "client-detached":
		return ClientDetached{Client: arg(0)}
	case "pause":
		return Pause{Pane: arg(0)}
	case "continue":
		return Continue{Pane: arg(0)}
	case "paste-buffer-changed":
		return PasteBufferChanged{Buffer: rest}
	case "exit":
		return Exit{Reason: rest}
	}
	return Unknown{Name: name, Line: line}
}

// ParseLayout returns the panes of a tmux layout string such as
// "b25d,80x24,0,0{40x24,0,0,1,39x24,41,0,2}". Pane ids are returned with
// their '%' prefix.
func ParseLayout(layout string) ([]PaneSize, error) {
	_, body, ok := strings.Cut(layout, ",")
	if !ok {
		return nil, fmt.Errorf("parse layout %q: no checksum", layout)
	}
	p := layoutParser{s: body}
	var panes []PaneSize
	if err := p.cell(&panes); err != nil {
		return nil, fmt.Errorf("parse layout %q: %w", layout, err)
	}
	if p.i != len(p.s) {
		return nil, fmt.Errorf("parse layout %q: trailing data at %d", layout, p.i)
	}
	return panes, nil
}

type layoutParser struct {
	s     string
	i     int
	depth int
}

func (p *layoutParser) num() (int, error) {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
	if start == p.i || p.i-start > 9 {
		return 0, fmt.Errorf("expected a number at %d", start)
	}
	return strconv.Atoi(p.s[start:p.i])
}

func (p *layoutParser) expect(c byte) error {
	if p.i >= len(p.s) || p.s[p.i] != c {
		return fmt.Errorf("expected %q at %d", c, p.i)
	}
	p.i++
	return nil
}

// cell parses WxH,X,Y followed by ",ID" (a pane) or "{…}"/"[…]" (a split).
func (p *layoutParser) cell(panes *[]PaneSize) error {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > 64 {
		return fmt.Errorf("layout nested too deeply")
	}
	var ps PaneSize
	var err error
	if ps.Width, err = p.num(); err != nil {
		return err
	}
	if err = p.expect('x'); err != nil {
		return err
	}
	if ps.Height, err = p.num(); err != nil {
		return err
	}
	if err = p.expect(','); err != nil {
		return err
	}
	if ps.X, err = p.num(); err != nil {
		return err
	}
	if err = p.expect(','); err != nil {
		return err
	}
	if ps.Y, err = p.num(); err != nil {
		return err
	}
	if p.i >= len(p.s) {
		return fmt.Errorf("unexpected end")
	}
	switch p.s[p.i] {
	case ',':
		p.i++
		id, err := p.num()
		if err != nil {
			return err
		}
		ps.Pane = "%" + strconv.Itoa(id)
		*panes = append(*panes, ps)
		return nil
	case '{', '[':
		closer := byte('}')
		if p.s[p.i] == '[' {
			closer = ']'
		}
		p.i++
		for {
			if err := p.cell(panes); err != nil {
				return err
			}
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
				continue
			}
			return p.expect(closer)
		}
	}
	return fmt.Errorf("unexpected %q at %d", p.s[p.i], p.i)
}
