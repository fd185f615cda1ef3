package orchestrator

import "github.com/termsprawl/termsprawl/tools"

// ParseKeys turns a space-separated list of key chords ("Enter C-c
// Control+C M-x PageUp F5 S-Tab") into tmux key names; the key table is
// tools.ParseKeys's (the human CLI checks keys with it before sending).
// tmux encodes the names for the pane's current modes (application cursor
// keys, keypad), so the orchestrator never builds escape sequences itself.
func ParseKeys(spec string) ([]string, error) { return tools.ParseKeys(spec) }
