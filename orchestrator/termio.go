package orchestrator

import (
	"github.com/termsprawl/termsprawl/orchestrator/screen"
	"github.com/termsprawl/termsprawl/orchestrator/termio"
	"github.com/termsprawl/termsprawl/tools"
)

// The engine's side of orchestrator/termio: the mirror's modes in, the
// bytes or key names out.

// ParseKeys turns a space-separated list of key chords ("Enter C-c
// Control+C M-x PageUp F5 S-Tab") into tmux key names (termio.ParseKeys).
func ParseKeys(spec string) ([]string, error) { return termio.ParseKeys(spec) }

// mouseModeOf is the contract's view of the mirror's mouse modes.
func mouseModeOf(m screen.Modes) tools.MouseMode {
	return termio.Modes{Tracking: m.MouseTracking, SGR: m.MouseSGR, URXVT: m.MouseURXVT, UTF8: m.MouseUTF8}.MouseMode()
}
