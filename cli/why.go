package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// termsprawl why NODE: an agent's state and the evidence behind it,
// newest first (agent_status {node, explain: true}; CONTRACT §20).

type whyCmd struct {
	JSON bool `name:"json" help:"Print agent_status's row (with why) as JSON."`
	nodeArg
}

func (whyCmd) Examples() string {
	return `termsprawl why build                       # why termsprawl thinks build is working, waiting, idle…
termsprawl why build --json`
}

func (h *human) why(g whyCmd) int {
	list, code := callAs[tools.AgentList](h, "agent_status", map[string]any{"node": g.Node, "explain": true})
	if code != ExitOK {
		return code
	}
	if len(list.Agents) == 0 {
		fmt.Fprintf(h.stderr, "%s: %s is not an agent\n", h.prefix(), g.Node)
		return ExitNo
	}
	a := list.Agents[0]
	if g.JSON {
		_ = prettyJSON(h.stdout, a)
		return ExitOK
	}
	since := ""
	if t, err := time.Parse(time.RFC3339, a.Since); err == nil {
		since = fmt.Sprintf(" since %s (%s ago)", t.Local().Format("15:04:05"), time.Since(t).Round(time.Second))
	}
	human := ""
	if a.NeedsHuman {
		human = ": needs a human"
	}
	fmt.Fprintf(h.stdout, "%s (%s) is %s%s%s\n", vis(a.Node), dash(a.Agent), vis(a.State), since, human)
	if a.Message != "" {
		fmt.Fprintf(h.stdout, "  %s\n", clipText(a.Message, 200))
	}
	if a.Usage != nil {
		fmt.Fprintf(h.stdout, "  usage: %s\n", agentUsageText(a.Usage))
	}
	if a.Budget != "" {
		fmt.Fprintf(h.stdout, "  budget: %s\n", tools.VisibleLine(a.Budget))
	}
	if len(a.Why) == 0 {
		fmt.Fprintln(h.stdout, "no evidence kept")
		return ExitOK
	}
	tw := tabwriter.NewWriter(h.stdout, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tSOURCE\tEVENT\tDETAIL")
	for _, e := range a.Why {
		at := e.At
		if t, err := time.Parse(time.RFC3339Nano, e.At); err == nil {
			at = t.Local().Format("15:04:05.000")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", at, vis(e.Source), vis(e.Event), dash(clipText(e.Detail, 100)))
	}
	_ = tw.Flush()
	return ExitOK
}
