// Package tmuxenv holds the one environment rule that both the tmux client
// and the contract's side need: a tmux command or an attaching terminal
// must not inherit the TMUX and TMUX_PANE of a tmux it runs inside.
package tmuxenv

import "strings"

// WithoutTmux returns env without TMUX and TMUX_PANE, so tmux commands and
// attaching terminals work the same inside and outside tmux.
func WithoutTmux(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if strings.HasPrefix(kv, "TMUX=") || strings.HasPrefix(kv, "TMUX_PANE=") {
			continue
		}
		out = append(out, kv)
	}
	return out
}
