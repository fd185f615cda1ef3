package termio

import "github.com/termsprawl/termsprawl/tools"

// ParseKeys turns a space-separated list of key chords ("Enter C-c
// Control+C M-x PageUp F5 S-Tab") into tmux key names. The key table is
// tools.ParseKeys's, so the human CLI checks keys with the same table
// before it sends anything. tmux encodes the names for the pane's current
// modes (application cursor keys, keypad, its extended-keys setting), so
// the engine never builds escape sequences for keys itself: x/ansi's key
// sequences would encode for a mode we would have to track, and tmux's own
// encoder (which the pane's program is talking to anyway) already knows it.
func ParseKeys(spec string) ([]string, error) { return tools.ParseKeys(spec) }
