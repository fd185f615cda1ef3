package orchestrator

import (
	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// serverConf is the private server's configuration: TmuxServerConf, and
// the binding of prefix tools.PickerKey when there is a picker to run
// (CONTRACT §18: a human attached to any node answers dialogs from
// there). The picker is Config.Picker, run in a tmux 3.3a display-popup
// that closes when it ends.
func serverConf(picker string) string {
	if picker == "" {
		return TmuxServerConf
	}
	return TmuxServerConf + tmuxctl.Command("bind-key", tools.PickerKey, "display-popup", "-E", "-w", "90%", "-h", "80%",
		"-T", " termsprawl: pending dialogs ", picker) + "\n"
}
