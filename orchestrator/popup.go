package orchestrator

import (
	"strings"

	"github.com/termsprawl/termsprawl/orchestrator/hosts"
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
	b.WriteString(hosts.KeysConf(detach, answer, cfg.Picker))
	return b.String()
}
