package hosts

import (
	"strings"

	"github.com/termsprawl/termsprawl/tmuxctl"
	"github.com/termsprawl/termsprawl/tools"
)

// KeysConf is the part of a private server's configuration that depends
// on the keys (CONTRACT §26): focus events, the status line, the
// root-table detach key and, with a picker, the keys that open it in a
// popup. The engine sources it again on every server when config.toml's
// [keys] change.
func KeysConf(detach, answer, picker string) string {
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
