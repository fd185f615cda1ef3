package cli

import (
	"fmt"
	"os"
	"os/exec"

	"github.com/termsprawl/termsprawl/tools"
)

// monitorCmd is `termsprawl monitor`: the read-only web monitor's URL
// (CONTRACT §14), opened in the browser.
type monitorCmd struct {
	NoOpen bool `name:"no-open" help:"Print the URL only; do not open it with xdg-open."`
}

func (monitorCmd) Examples() string {
	return `termsprawl monitor                         # print the monitor's URL and open it in the browser
termsprawl monitor --no-open               # print it only (open it yourself, or over an SSH tunnel)`
}

func (monitorCmd) Help() string {
	return "The monitor is a read-only page served by the running termsprawl on 127.0.0.1: every node's live screen, status, agent state, pending dialogs, recording status and watches. Its URL holds a random capability kept in <state>/monitor.json (mode 0600): anyone with the URL can watch, nobody can type through it."
}

// monitor asks the running orchestrator for the monitor's URL, prints it
// and opens it unless noOpen.
func (h *human) monitor(noOpen bool) int {
	info, code := callAs[tools.SessionInfo](h, "session_info", map[string]any{})
	if code != ExitOK {
		return code
	}
	if info.MonitorURL == "" {
		fmt.Fprintf(h.stderr, "%s: the running termsprawl (version %s) serves no monitor: restart it with `termsprawl down && termsprawl up --detach`\n", h.prefix(), info.Version)
		return ExitNo
	}
	fmt.Fprintf(h.stdout, "monitor (read-only): %s\n", info.MonitorURL)
	if !noOpen {
		h.openBrowser(info.MonitorURL)
	}
	return ExitOK
}

// openBrowser opens url with xdg-open, detached; without xdg-open it says
// so on stderr and does not fail (the URL is printed).
func (h *human) openBrowser(url string) {
	xdg, err := exec.LookPath("xdg-open")
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: xdg-open is not installed, so no browser was opened: open the URL above yourself\n", h.prefix())
		return
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: cannot open the browser: %v: open the URL above yourself\n", h.prefix(), err)
		return
	}
	defer devnull.Close()
	cmd := exec.Command(xdg, url)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.Env = tools.EnvWithoutTmux(os.Environ())
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(h.stderr, "%s: xdg-open: %v: open the URL above yourself\n", h.prefix(), err)
		return
	}
	// xdg-open hands the URL to the browser and exits; reap it.
	go func() { _ = cmd.Wait() }()
}
