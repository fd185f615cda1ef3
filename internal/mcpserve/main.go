package mcpserve

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
)

// BridgeCommand is the argument of the termsprawl binary that runs the
// stdio bridge: `termsprawlctl mcp` executes
// `termsprawl mcp-bridge --session PATH [--wait D] [--retry N] [--verbose]`
// with the session it resolved. It is not a command for people.
const BridgeCommand = "mcp-bridge"

// MainBridge parses the bridge's arguments (after BridgeCommand) and runs
// it until stdin ends or SIGINT/SIGTERM.
func MainBridge(args []string, version string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("termsprawl "+BridgeCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg StdioConfig
	fs.StringVar(&cfg.Session, "session", "", "absolute path of the session file")
	fs.DurationVar(&cfg.Wait, "wait", 0, "when termsprawl is down, wait this long for it")
	fs.IntVar(&cfg.Retry, "retry", 0, "retry failed connections this many times")
	fs.BoolVar(&cfg.Verbose, "verbose", false, "log at info level")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 || cfg.Session == "" || !filepath.IsAbs(cfg.Session) || cfg.Wait < 0 || cfg.Retry < 0 {
		fmt.Fprintf(stderr, "termsprawl %s: this is the MCP stdio bridge that `termsprawlctl mcp` runs; register `termsprawlctl mcp` with your MCP host instead\n", BridgeCommand)
		return exitUsage
	}
	cfg.Version = version
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	return RunStdio(ctx, cfg, stdin, stdout, stderr)
}
