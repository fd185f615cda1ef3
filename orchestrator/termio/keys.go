package termio

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// tmuxKeys are the key names tmux's send-keys understands, as tmux spells
// them. tmux encodes them for the pane's current modes (application cursor
// keys, keypad, its extended-keys setting), so the orchestrator never
// builds escape sequences for keys itself: x/ansi's key sequences would
// encode for a mode we would have to track, and tmux's own encoder (which
// the pane's program is talking to anyway) already knows it.
var tmuxKeys = map[string]bool{
	"Enter": true, "Escape": true, "Tab": true, "BTab": true, "BSpace": true, "Space": true,
	"Up": true, "Down": true, "Left": true, "Right": true,
	"Home": true, "End": true, "PPage": true, "NPage": true, "IC": true, "DC": true,
	"F1": true, "F2": true, "F3": true, "F4": true, "F5": true, "F6": true,
	"F7": true, "F8": true, "F9": true, "F10": true, "F11": true, "F12": true,
	"KP0": true, "KP1": true, "KP2": true, "KP3": true, "KP4": true, "KP5": true,
	"KP6": true, "KP7": true, "KP8": true, "KP9": true, "KPEnter": true,
}

// keyAliases maps readable names (compared case-insensitively) to tmux's.
var keyAliases = map[string]string{
	"enter": "Enter", "return": "Enter", "ret": "Enter",
	"escape": "Escape", "esc": "Escape",
	"tab": "Tab", "btab": "BTab",
	"bspace": "BSpace", "backspace": "BSpace", "bs": "BSpace",
	"space": "Space",
	"up":    "Up", "down": "Down", "left": "Left", "right": "Right",
	"home": "Home", "end": "End",
	"ppage": "PPage", "pageup": "PPage", "pgup": "PPage",
	"npage": "NPage", "pagedown": "NPage", "pgdn": "NPage",
	"ic": "IC", "insert": "IC", "ins": "IC",
	"dc": "DC", "delete": "DC", "del": "DC",
}

// modifierNames maps modifier words to tmux's prefixes.
var modifierNames = map[string]string{
	"c": "C-", "ctrl": "C-", "control": "C-",
	"m": "M-", "alt": "M-", "meta": "M-", "opt": "M-", "option": "M-",
	"s": "S-", "shift": "S-",
}

// ParseKeys turns a space-separated list of key chords ("Enter C-c
// Control+C M-x PageUp F5 S-Tab") into tmux key names. An unknown key is an
// error that names it.
func ParseKeys(spec string) ([]string, error) {
	fields := strings.Fields(spec)
	if len(fields) == 0 {
		return nil, fmt.Errorf("no keys given: pass key names such as \"Enter\", \"C-c\" or \"Up Up Enter\"")
	}
	out := make([]string, 0, len(fields))
	for _, f := range fields {
		k, err := parseChord(f)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

func parseChord(chord string) (string, error) {
	var mods []string
	rest := chord
	for {
		// tmux style "C-x", "M-S-Up"; readable style "Control+C", "Alt+x".
		if i := strings.IndexAny(rest, "+-"); i > 0 && i < len(rest)-1 {
			if m, ok := modifierNames[strings.ToLower(rest[:i])]; ok {
				mods = append(mods, m)
				rest = rest[i+1:]
				continue
			}
		}
		break
	}
	base, err := baseKey(rest)
	if err != nil {
		return "", fmt.Errorf("unknown key %q in %q: use tmux key names (Enter, Escape, Tab, BSpace, Up, PPage, F1…F12, C-x, M-x, S-Tab) or aliases (Control+C, PageUp)", rest, chord)
	}
	hasShift := false
	var prefix strings.Builder
	for _, m := range mods {
		if m == "S-" {
			hasShift = true
			continue
		}
		if !strings.Contains(prefix.String(), m) {
			prefix.WriteString(m)
		}
	}
	if hasShift {
		switch {
		case base == "Tab":
			base = "BTab"
		case utf8.RuneCountInString(base) == 1 && base >= "a" && base <= "z":
			base = strings.ToUpper(base)
		default:
			prefix.WriteString("S-")
		}
	}
	// Control with a letter: tmux wants the lower-case letter.
	if strings.Contains(prefix.String(), "C-") && len(base) == 1 && base[0] >= 'A' && base[0] <= 'Z' {
		base = strings.ToLower(base)
	}
	return prefix.String() + base, nil
}

func baseKey(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("empty key")
	}
	if tmuxKeys[s] {
		return s, nil
	}
	if k, ok := keyAliases[strings.ToLower(s)]; ok {
		return k, nil
	}
	up := strings.ToUpper(s)
	if tmuxKeys[up] && strings.HasPrefix(up, "F") {
		return up, nil
	}
	if utf8.RuneCountInString(s) == 1 {
		r, _ := utf8.DecodeRuneInString(s)
		if r >= 0x20 && r != 0x7f {
			return s, nil
		}
	}
	return "", fmt.Errorf("unknown key %q", s)
}
