package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// termsprawl hosts [--json] and termsprawl hosts rm NAME [--close-nodes]
// (CONTRACT §23): host_list and host_remove.

type hostsCmd struct {
	Action     string `arg:"" name:"ACTION" optional:"" enum:"ls,rm" default:"ls" help:"ls (the default): list the hosts; rm NAME: stop driving host NAME and remove it from hosts.json."`
	Name       string `arg:"" name:"NAME" optional:"" help:"The host to remove (rm)."`
	JSON       bool   `name:"json" help:"Print host_list's value (or host_remove's receipt) as JSON."`
	CloseNodes bool   `name:"close-nodes" help:"rm: also close the host's nodes (those of a host that cannot be reached are forgotten here, and said so)."`
}

func (hostsCmd) Examples() string {
	return `termsprawl hosts                           # name, destination, state, nodes, round trip, since
termsprawl hosts --json                    # the same as JSON
termsprawl hosts rm big                    # refused while big has live nodes
termsprawl hosts rm big --close-nodes      # close them (or forget them, if big is gone for good), then remove it`
}

func (h *human) hosts(c hostsCmd) int {
	switch c.Action {
	case "rm":
		return h.hostsRemove(c)
	}
	if c.Name != "" || c.CloseNodes {
		return usageError(h.stderr, h.prefix(), fmt.Errorf("NAME and --close-nodes go with rm: termsprawl hosts rm NAME [--close-nodes]"), "")
	}
	l, code := callAs[tools.HostList](h, "host_list", map[string]any{})
	if code != ExitOK {
		return code
	}
	if c.JSON {
		_ = prettyJSON(h.stdout, l)
		return ExitOK
	}
	if len(l.Hosts) == 0 {
		fmt.Fprintf(h.stdout, "no hosts: add one with `termsprawl up --host NAME=[user@]machine` (kept in %s)\n", tools.HostsPath(h.stateDir))
		return ExitOK
	}
	tw := tabwriter.NewWriter(h.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDEST\tSTATE\tNODES\tROUND TRIP\tSINCE")
	now := time.Now()
	for _, r := range l.Hosts {
		rtt := "-"
		if r.RoundTripMS != nil {
			rtt = fmt.Sprintf("%.1f ms", *r.RoundTripMS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", vis(r.Name), vis(r.Dest), vis(r.State), r.Nodes, rtt, sinceText(now, r.Since))
	}
	_ = tw.Flush()
	for _, r := range l.Hosts {
		if r.State != tools.HostStateConnected && r.Error != "" {
			fmt.Fprintf(h.stdout, "%s: %s\n", vis(r.Name), tools.VisibleText(r.Error))
		}
	}
	return ExitOK
}

// sinceText is a state's age as a person reads it.
func sinceText(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
	return t.Local().Format("2006-01-02 15:04")
}

func (h *human) hostsRemove(c hostsCmd) int {
	if c.Name == "" {
		return usageError(h.stderr, h.prefix(), fmt.Errorf("rm needs the host's name: termsprawl hosts rm NAME [--close-nodes]"), "")
	}
	return h.simple("host_remove", map[string]any{"host": c.Name, "close_nodes": c.CloseNodes}, func(v json.RawMessage) {
		if c.JSON {
			printReceipt(h.stdout, v)
			return
		}
		var r tools.ReceiptOf[tools.HostRemoved]
		if tools.DecodeValue(v, &r) != nil {
			fmt.Fprintf(h.stdout, "removed host %s\n", c.Name)
			return
		}
		fmt.Fprintln(h.stdout, tools.VisibleText(r.Result.Note))
		if len(r.Result.Closed) > 0 {
			fmt.Fprintf(h.stdout, "closed: %s\n", vis(strings.Join(r.Result.Closed, ", ")))
		}
		if len(r.Result.Forgotten) > 0 {
			fmt.Fprintf(h.stdout, "forgotten (not ended): %s\n", vis(strings.Join(r.Result.Forgotten, ", ")))
		}
	})
}
