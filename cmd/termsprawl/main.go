// Command termsprawl runs the termsprawl orchestrator and is the human's
// CLI for it (see package cli). It also carries the MCP server:
// `termsprawlctl mcp` executes `termsprawl mcp-bridge` (internal/mcpserve),
// and the orchestrator serves MCP over HTTP at /mcp with the same engine,
// so that termsprawlctl itself never links mcp-go. And it carries
// termsprawlctl's full CLI: `termsprawl __termsprawlctl ARGS…` is what
// termsprawlctl executes for everything but call, doctor and the state
// hooks (internal/ctllite).
package main

import (
	"context"
	"net/http"
	"os"

	"github.com/termsprawl/termsprawl/cli"
	"github.com/termsprawl/termsprawl/cli/dash"
	"github.com/termsprawl/termsprawl/internal/ctllite"
	"github.com/termsprawl/termsprawl/internal/mcpserve"
	"github.com/termsprawl/termsprawl/orchestrator/toolserver"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == mcpserve.BridgeCommand {
		os.Exit(mcpserve.MainBridge(os.Args[2:], cli.VersionString(), os.Stdin, os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == ctllite.FullCommand {
		// termsprawlctl's full CLI (everything but its hot path).
		os.Exit(cli.MainCtl(os.Args[2:], os.Stdin, os.Stdout, os.Stderr))
	}
	toolserver.UseMCP(mcpEngine(cli.VersionString()))
	cli.UseDashboard(runDashboard)
	os.Exit(cli.MainTermsprawl(os.Args[1:], os.Stdout, os.Stderr))
}

// mcpEngine builds /mcp's protocol engine for the tool server.
func mcpEngine(version string) toolserver.MCPEngineFactory {
	return func(c toolserver.MCPEngineConfig) toolserver.MCPEngine {
		return mcpserve.NewHTTP(mcpserve.HTTPConfig{
			Version:  version,
			Call:     c.Call,
			Sessions: func(r *http.Request) mcpserve.SessionIDs { return c.Sessions(r) },
			IdleTTL:  c.IdleTTL,
			Logger:   c.Logger,
		})
	}
}

// runDashboard is termsprawl dash: cli/dash, plugged in here so that
// termsprawlctl (which links cli) never links Bubble Tea.
func runDashboard(ctx context.Context, p cli.DashParams) error {
	return dash.Run(ctx, dash.RunConfig{Session: p.Session, Options: dash.Options{
		Call: p.Call, Attach: p.Attach, Self: p.Self, NoColor: p.NoColor, DetachKey: p.DetachKey, AnswerKey: p.AnswerKey, Trust: p.Trust}})
}
