package cli

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"github.com/termsprawl/termsprawl/tools"
)

// dailyCmds are embedded in the human grammar: screenshot.
type dailyCmds struct {
	Screenshot screenshotCmd `cmd:"" help:"Write a PNG of a node's screen (-o FILE.png; default NODE.png here)."`
}

type screenshotCmd struct {
	Out   string `name:"output" short:"o" placeholder:"FILE.png" help:"Where to write the PNG (default: NODE.png in this directory)."`
	Scale int    `name:"scale" default:"1" help:"Pixels per cell: 1 (8x17) to 4."`
	Theme string `name:"theme" default:"dark" enum:"dark,light" help:"Colours: dark or light."`
	nodeArg
}

func (screenshotCmd) Examples() string {
	return `termsprawl screenshot build               # build.png: the screen as the human sees it, colours included
termsprawl screenshot build -o /tmp/b.png --scale 2 --theme light`
}

// runDailyCmd runs screenshot; ok is false for other commands.
func (h *human) runDailyCmd(cmd string, g *humanGrammar) (int, bool) {
	if cmd == "screenshot" {
		return h.screenshot(g.Screenshot), true
	}
	return 0, false
}

// screenshot writes terminal_snapshot's PNG (CONTRACT §12, §26).
func (h *human) screenshot(c screenshotCmd) int {
	if c.Scale < 1 || c.Scale > 4 {
		return usageError(h.stderr, h.prefix(), fmt.Errorf("--scale %d is out of range: give 1 to 4", c.Scale), "")
	}
	snap, code := callAs[tools.Snapshot](h, "terminal_snapshot", map[string]any{"terminal": c.Node, "screenshot": true, "screenshot_scale": c.Scale, "screenshot_theme": c.Theme})
	if code != ExitOK {
		return code
	}
	if snap.Image == "" {
		fmt.Fprintf(h.stderr, "%s: node %s has no screen to draw (it is %s); `termsprawl snapshot %s` prints its last text\n", h.prefix(), snap.Terminal, snap.Status, snap.Terminal)
		return ExitNo
	}
	png, err := base64.StdEncoding.DecodeString(snap.Image)
	if err != nil {
		fmt.Fprintf(h.stderr, "%s: termsprawl's PNG is not base64: %v\n", h.prefix(), err)
		return ExitNo
	}
	out := c.Out
	if out == "" {
		out = snap.Terminal + ".png"
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		fmt.Fprintf(h.stderr, "%s: write %s: %v\n", h.prefix(), out, err)
		return ExitNo
	}
	abs, _ := filepath.Abs(out)
	size := ""
	if snap.Screenshot != nil {
		size = fmt.Sprintf(", %dx%d pixels", snap.Screenshot.Width, snap.Screenshot.Height)
	}
	fmt.Fprintf(h.stdout, "wrote %s (node %s at revision %d%s)\n", abs, snap.Terminal, snap.Revision, size)
	return ExitOK
}
