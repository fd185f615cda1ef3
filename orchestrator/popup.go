package orchestrator

import (
	"strings"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// serverConf is the private server's configuration: TmuxServerConf, the
// status line every attached human client shows (control clients have
// none, so mirrors keep their size), focus events for the programs that
// ask for them, and the keys of CONTRACT §26: a root-table key (no
// prefix) that detaches the client, so it works from inside the human's
// own tmux, where the prefix goes to the outer server; and, when there is
// a picker to run, a root-table key and prefix tools.PickerKey that open
// it (CONTRACT §18: a human attached to any node answers dialogs from
// there). The picker is Config.Picker, run in a tmux 3.3a display-popup
// that closes when it ends.
func serverConf(cfg Config) string {
	detach, answer := keysOr(cfg.DetachKey, cfg.AnswerKey)
	var b strings.Builder
	b.WriteString(TmuxServerConf)
	b.WriteString(keysConf(detach, answer, cfg.Picker))
	return b.String()
}

// keysConf is the part of serverConf that depends on the keys: sourced
// again on every server when config.toml's [keys] change (ApplyKeys).
func keysConf(detach, answer, picker string) string {
	var b strings.Builder
	line := func(args ...string) {
		b.WriteString(tmuxctl.Command(args[0], args[1:]...))
		b.WriteString("\n")
	}
	line("set-option", "-g", "focus-events", "on")
	line("set-option", "-g", "status", "on")
	line("set-option", "-g", "status-interval", "0")
	line("set-option", "-g", "status-style", "bg=colour236,fg=colour250")
	line("set-option", "-g", "status-format[0]", StatusLine(detach, answer, picker != ""))
	line("bind-key", "-n", detach, "detach-client")
	if picker != "" {
		popup := []string{"display-popup", "-E", "-w", "90%", "-h", "80%", "-T", " termsprawl: pending dialogs ", picker}
		line(append([]string{"bind-key", tools.PickerKey}, popup...)...)
		line(append([]string{"bind-key", "-n", answer}, popup...)...)
	}
	return b.String()
}

// StatusLine is the tmux format of the status line of every client
// attached to a node: `termsprawl · NODE · KEY detach · KEY answer`.
func StatusLine(detach, answer string, picker bool) string {
	esc := func(s string) string { return strings.ReplaceAll(s, "#", "##") }
	s := " termsprawl · #{@termsprawl_node} · " + esc(detach) + " detach"
	if picker {
		s += " · " + esc(answer) + " answer"
	}
	return s
}
