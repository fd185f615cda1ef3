package cli

import (
	"fmt"

	"github.com/termsprawl/termsprawl/tools"
)

// termsprawl notify test: one notification to each configured target
// (CONTRACT §20), and what each answered.

type notifyCmd struct {
	Action string `arg:"" name:"ACTION" enum:"test" help:"test: send one notification to each target (up --notify, <state>/notify.json) and print what each answered."`
	JSON   bool   `name:"json" help:"Print notify_test's value as JSON."`
}

func (notifyCmd) Examples() string {
	return `termsprawl notify test                     # one test notification per target, and their answers
termsprawl up --notify desktop --notify webhook=https://ntfy.sh/my-topic   # where they go`
}

func (h *human) notifyTest(asJSON bool) int {
	res, code := callAs[tools.NotifyTestResult](h, "notify_test", map[string]any{})
	if code != ExitOK {
		return code
	}
	if asJSON {
		_ = prettyJSON(h.stdout, res)
		return ExitOK
	}
	failed := false
	for _, t := range res.Targets {
		mark := "ok"
		if !t.OK {
			mark, failed = "FAILED", true
		}
		fmt.Fprintf(h.stdout, "%-6s %s: %s\n", mark, tools.VisibleLine(t.Target), tools.VisibleLine(t.Answer))
	}
	fmt.Fprintf(h.stdout, "mode %s (quiet: needs a human only; normal: also errors and crashes; all: also finished turns and exits)\n", res.Mode)
	if failed {
		return ExitNo
	}
	return ExitOK
}
