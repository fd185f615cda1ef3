package orchestrator

import (
	"github.com/termsprawl/termsprawl/orchestrator/termio"
)

// The engine's side of orchestrator/termio: the mirror's modes in, the
// bytes or key names out.

// ParseKeys turns a space-separated list of key chords ("Enter C-c
// Control+C M-x PageUp F5 S-Tab") into tmux key names (termio.ParseKeys).
func ParseKeys(spec string) ([]string, error) { return termio.ParseKeys(spec) }
