package tools

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// Key names for terminal_press: the table lives here, in the contract, so
// the human CLI checks `termsprawl press` before anything is sent and the
// engine encodes the same names (orchestrator.ParseKeys).

// tmuxKeys are the key names tmux's send-keys understands, as tmux spells
// them. tmux encodes them for the pane's current modes (application cursor
// keys, keypad), so the orchestrator never builds escape sequences itself.
var tmuxKeys = map[string]bool{
	"Enter": true, "Escape": true, "Tab": true, "BTab": true, "BSpace": true, "Space": true,
	"Up": true, "Down": true, "Left": true, "Right": true,
	"Home": true, "End": true, "PPage": true, "NPage": true, "IC": true, "DC": true,
	"F1": true, "F2": true, "F3": true, "F4": true, "F5": true, "F6": true,
	"F7": true, "F8": true, "F9": true, "F10": true, "F11": true, "F12": true,
	"KP0": true, "KP1": true, "KP2": true, "KP3": true, "KP4": true, "KP5": true,
	"KP6": true, "KP7": true, "KP8": true, "KP9": true, "KPEnter": true,
}

// IsKeyName reports whether name is one of tmux's key names (Enter, F5,
// KP0 …) as ParseKeys gives them, without modifiers.
func IsKeyName(name string) bool { return tmuxKeys[name] }

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
		return "", fmt.Errorf("unknown key %q in %q%s: valid keys are a single character, %s, with modifiers C- M- S- (or Control+ Alt+ Shift+)", rest, chord, didYouMeanKey(rest), strings.Join(KeyNames(), " "))
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

// keyNameOrder is how KeyNames lists tmuxKeys (KP0…KP9 as one entry);
// a test checks that it names every one.
var keyNameOrder = []string{"Enter", "Escape", "Tab", "BTab", "BSpace", "Space", "Up", "Down", "Left", "Right",
	"Home", "End", "PPage", "NPage", "IC", "DC", "F1", "F2", "F3", "F4", "F5", "F6", "F7", "F8", "F9", "F10", "F11", "F12",
	"KPEnter", "KP0…KP9"}

// KeyNames lists the named keys terminal_press takes (tmux's names, then
// some aliases), for error messages and help.
func KeyNames() []string {
	return append(append([]string(nil), keyNameOrder...), "Return", "Esc", "Backspace", "PageUp", "PageDown", "Insert", "Delete")
}

// didYouMeanKey is " (did you mean Enter?)" for a near key name, else "".
func didYouMeanKey(s string) string {
	cands := make([]string, 0, len(tmuxKeys)+len(keyAliases))
	for k := range tmuxKeys {
		cands = append(cands, k)
	}
	for k := range keyAliases {
		cands = append(cands, k)
	}
	sort.Strings(cands)
	near := Suggest(s, cands, true)
	if len(near) == 0 {
		return ""
	}
	if k, ok := keyAliases[strings.ToLower(near[0])]; ok {
		return fmt.Sprintf(" (did you mean %s?)", k)
	}
	return fmt.Sprintf(" (did you mean %s?)", near[0])
}
