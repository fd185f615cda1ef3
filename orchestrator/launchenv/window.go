package launchenv

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"syscall"

	"github.com/termsprawl/termsprawl/tools"
)

// knownEmulators is tried in order when no preference is set.
var knownEmulators = [][]string{
	{"x-terminal-emulator", "-e"}, {"kitty", "--"}, {"alacritty", "-e"},
	{"gnome-terminal", "--"}, {"konsole", "-e"}, {"xterm", "-e"},
}

// Emulator is the argv of a new terminal window that runs attach (the
// command that attaches to node id): the emulator of the preferences file
// under stateDir, or the first known emulator on PATH.
func Emulator(stateDir, id string, attach []string) ([]string, error) {
	prefPath := tools.PreferencesPath(stateDir)
	prefs, err := tools.ReadPreferences(prefPath)
	if err == nil {
		return prefs.Argv(attach), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, tools.Errorf(tools.KindUsage, "%s: %w: fix or remove it", prefPath, err)
	}
	for _, e := range knownEmulators {
		if p, err := exec.LookPath(e[0]); err == nil {
			return append(append([]string{p}, e[1:]...), attach...), nil
		}
	}
	return nil, tools.Errorf(tools.KindNotRun,
		"no terminal emulator found to open a window with (tried x-terminal-emulator, kitty, alacritty, gnome-terminal, konsole, xterm) and none is set in %s: write yours there, e.g. {\"executable\":\"kitty\",\"args\":[\"--\",\"{command}\"]} ({command} stands for the attach command), or run `termsprawl attach %s` in a terminal instead", prefPath, id)
}

// StartWindow starts argv (an Emulator's, for node id) detached: its own
// session, stdio ignored, TMUX and TMUX_PANE removed; it is reaped
// whenever it ends. It returns its pid.
func StartWindow(id string, argv []string) (int, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = tools.EnvWithoutTmux(os.Environ())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, tools.Errorf(tools.KindRejected, "start %s: %w: run `termsprawl attach %s` in a terminal instead", argv[0], err, id)
	}
	go cmd.Wait() // reap it whenever it ends
	return cmd.Process.Pid, nil
}
