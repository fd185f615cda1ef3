package dash

import (
	"unicode"

	tea "charm.land/bubbletea/v2"
)

// lineInput is a one-line editor: the filter, a deny reason, the launch
// form's fields. (bubbles' textinput would pull in lipgloss, whose
// package init runs `tmux info` inside tmux: CHOICES.md.)
type lineInput struct {
	Prompt, Placeholder string
	value               []rune
	pos                 int
	focused             bool
}

func (l *lineInput) Value() string { return string(l.value) }

func (l *lineInput) SetValue(s string) {
	l.value = []rune(s)
	l.pos = len(l.value)
}

func (l *lineInput) Focus() tea.Cmd { l.focused = true; return nil }

func (l *lineInput) Blur() { l.focused = false }

// update edits the line with one key: text inserts; backspace, delete,
// left, right, home/C-a, end/C-e, C-u (to the start), C-k (to the end),
// C-w (a word back).
func (l *lineInput) update(k tea.KeyPressMsg) {
	switch k.String() {
	case "backspace", "ctrl+h":
		if l.pos > 0 {
			l.value = append(l.value[:l.pos-1], l.value[l.pos:]...)
			l.pos--
		}
	case "delete", "ctrl+d":
		if l.pos < len(l.value) {
			l.value = append(l.value[:l.pos], l.value[l.pos+1:]...)
		}
	case "left", "ctrl+b":
		l.pos = max(l.pos-1, 0)
	case "right", "ctrl+f":
		l.pos = min(l.pos+1, len(l.value))
	case "home", "ctrl+a":
		l.pos = 0
	case "end", "ctrl+e":
		l.pos = len(l.value)
	case "ctrl+u":
		l.value = append([]rune{}, l.value[l.pos:]...)
		l.pos = 0
	case "ctrl+k":
		l.value = l.value[:l.pos]
	case "ctrl+w":
		i := l.pos
		for i > 0 && unicode.IsSpace(l.value[i-1]) {
			i--
		}
		for i > 0 && !unicode.IsSpace(l.value[i-1]) {
			i--
		}
		l.value = append(l.value[:i], l.value[l.pos:]...)
		l.pos = i
	default:
		if k.Text != "" && k.Mod&(tea.ModCtrl|tea.ModAlt|tea.ModMeta|tea.ModSuper) == 0 {
			l.insert(k.Text)
		}
	}
}

func (l *lineInput) insert(s string) {
	var rs []rune
	for _, r := range s {
		if r >= ' ' && r != 0x7f {
			rs = append(rs, r)
		}
	}
	l.value = append(l.value[:l.pos], append(rs, l.value[l.pos:]...)...)
	l.pos += len(rs)
}

// view draws the prompt and the line, the cursor as an inverse cell when
// focused, the placeholder (faint) when empty.
func (l *lineInput) view(m *Model) string {
	out := l.Prompt
	if len(l.value) == 0 && l.Placeholder != "" {
		if l.focused {
			out += m.paint(" ", sty{reverse: true})
		}
		return out + m.paint(l.Placeholder, sty{faint: true})
	}
	before, at, after := string(l.value[:l.pos]), " ", ""
	if l.pos < len(l.value) {
		at, after = string(l.value[l.pos]), string(l.value[l.pos+1:])
	}
	if !l.focused {
		return out + string(l.value)
	}
	return out + before + m.paint(at, sty{reverse: true}) + after
}
