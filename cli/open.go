package cli

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// termsprawl open inside the user's own tmux opens a window of that tmux
// attached to the node, rather than a new terminal emulator window; a
// preferences.json (agent-tools/preferences.json: the user's chosen
// emulator) still wins, and inside a termsprawl node (whose tmux is
// termsprawl's private server) the emulator is used as elsewhere.

// userTmux returns the socket path of the tmux server this CLI runs in
// ($TMUX), or "" when it runs in none, or in one of termsprawl's own
// servers (socket, socket-2, …).
func userTmux(socket string) string {
	v := os.Getenv("TMUX")
	if v == "" {
		return ""
	}
	path, _, _ := strings.Cut(v, ",")
	if path == "" {
		return ""
	}
	own := regexp.MustCompile(`^` + regexp.QuoteMeta(socket) + `(-[0-9]+)?$`)
	if own.MatchString(filepath.Base(path)) {
		return ""
	}
	return path
}

// openInUserTmux opens a window of the user's tmux on node n; done is
// false when that does not apply (not inside a tmux of the user's, a
// preferences file names the emulator, a node on another machine).
func (h *human) openInUserTmux(n tools.NodeInfo) (done bool, code int) {
	if n.Host != "" || userTmux(h.socket) == "" {
		return false, ExitOK
	}
	if _, err := os.Stat(tools.PreferencesPath(h.stateDir)); err == nil {
		return false, ExitOK
	}
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		return false, ExitOK
	}
	attach := attachArgv(cmp.Or(n.TmuxSocket, h.socket), n, false, detachKey(h))
	name := cmp.Or(n.Name, n.Terminal)
	// The window's program attaches to termsprawl's server: it must not
	// think it is nested in the user's tmux.
	args := append([]string{"new-window", "-P", "-F", "#{session_name}:#{window_index}", "-n", name, "--", "env", "-u", "TMUX", "-u", "TMUX_PANE"}, attach...)
	out, err := exec.CommandContext(h.ctx, tmux, args...).CombinedOutput()
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: open a window of your tmux: %v: %s (`termsprawl attach %s` attaches this terminal instead)\n", h.prefix(), err, strings.TrimSpace(string(out)), n.Terminal)
		return true, ExitNo
	}
	fmt.Fprintf(h.stdout, "opened window %s of your tmux, attached to node %s\n", strings.TrimSpace(string(out)), n.Terminal)
	return true, ExitOK
}
