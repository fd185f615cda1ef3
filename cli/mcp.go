package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/termsprawl/termsprawl/internal/ctllite"
	"github.com/termsprawl/termsprawl/tools"
)

// The MCP server lives in the termsprawl binary (internal/mcpserve, which
// links mcp-go's server package); `termsprawlctl mcp` executes it. That
// keeps mcp-go out of termsprawlctl, whose call and doctor would pay its
// start-up on every run (docs/PERFORMANCE.md, "A lean termsprawlctl").

// bridgeCommand is internal/mcpserve.BridgeCommand (cli cannot import it
// without linking mcp-go into termsprawlctl; TestBridgeCommandName keeps
// them equal).
const bridgeCommand = "mcp-bridge"

type ctlMCP struct {
	PrintHTTP bool `name:"print-http" help:"Print the URL and Authorization header of MCP over Streamable HTTP (for hosts that connect over HTTP) instead of serving stdio."`
	JSON      bool `name:"json" help:"With --print-http: print {url, headers} as JSON."`
	Verbose   bool `name:"verbose" help:"Log connections and restarts to stderr too (default: only warnings and errors, as hosts show every stderr line as an error)."`
}

func (ctlMCP) Examples() string {
	return `termsprawlctl mcp                                      # inside a node, or as the operator outside one
termsprawlctl mcp --session /path/to/state/sessions/operator.json
termsprawlctl mcp --wait 30s --retry 3                 # ride out termsprawl restarts during tool calls
termsprawlctl mcp --print-http                         # URL and header for an HTTP MCP host`
}

// findHumanBinary finds termsprawl, which carries the MCP server, as
// termsprawlctl's hot path finds it for everything else.
func findHumanBinary() (string, error) {
	bin, err := ctllite.FindTermsprawl()
	if err != nil {
		return "", fmt.Errorf("the MCP server is part of the termsprawl binary: %w", err)
	}
	return bin, nil
}

// execve replaces the process (a variable so that tests can see the argv).
var execve = syscall.Exec

// runMCPCommand is `termsprawlctl mcp`: --print-http, or the stdio bridge
// of the termsprawl binary, executed in place of this process (stdio,
// signals and the exit code are the bridge's own).
func runMCPCommand(g *ctlGrammar, session string, stdout, stderr io.Writer) int {
	if g.MCP.PrintHTTP {
		return printHTTP(session, g.MCP.JSON, stdout, stderr)
	}
	bin, err := findHumanBinary()
	if err != nil {
		fmt.Fprintf(stderr, "%s mcp: %v\n", ctlName, err)
		return ExitNo
	}
	argv := bridgeArgv(bin, session, g.Wait, g.Retry, g.MCP.Verbose)
	err = execve(bin, argv, os.Environ())
	fmt.Fprintf(stderr, "%s mcp: cannot run %s: %v\n", ctlName, bin, err)
	return ExitNo
}

func bridgeArgv(bin, session string, wait time.Duration, retry int, verbose bool) []string {
	argv := []string{bin, bridgeCommand, "--session", session}
	if wait > 0 {
		argv = append(argv, "--wait", wait.String())
	}
	if retry > 0 {
		argv = append(argv, "--retry", strconv.Itoa(retry))
	}
	if verbose {
		argv = append(argv, "--verbose")
	}
	return argv
}

// httpSetup is what --print-http --json prints.
type httpSetup struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// mcpHTTPURL is the /mcp URL of the orchestrator whose /call URL is u.
func mcpHTTPURL(callURL string) string {
	return strings.TrimSuffix(callURL, "/call") + "/mcp"
}

// printHTTP prints the Streamable HTTP endpoint and the bearer header of
// the session (CONTRACT §15).
func printHTTP(session string, asJSON bool, stdout, stderr io.Writer) int {
	s, err := tools.ReadSession(session)
	if err != nil {
		fmt.Fprintf(stderr, "%s mcp --print-http: %v\n", ctlName, err)
		return ExitUsage
	}
	ep, err := tools.ReadEndpoint(tools.EndpointPathFor(session))
	if err != nil {
		fmt.Fprintf(stderr, "%s mcp --print-http: termsprawl is not running (%v): start it with `termsprawl up`; the URL changes with every start\n", ctlName, err)
		if errors.Is(err, os.ErrNotExist) {
			return ExitNotRunning
		}
		return ExitNotRunning
	}
	setup := httpSetup{URL: mcpHTTPURL(ep.URL), Headers: map[string]string{"Authorization": "Bearer " + s.Token}}
	if asJSON {
		data, _ := json.MarshalIndent(setup, "", "  ")
		fmt.Fprintln(stdout, string(data))
		return ExitOK
	}
	fmt.Fprintf(stdout, "url:    %s\n", setup.URL)
	fmt.Fprintf(stdout, "header: Authorization: Bearer %s\n", s.Token)
	fmt.Fprintf(stdout, "# node %s; the port changes whenever termsprawl restarts (run this again then); the token lives as long as the node\n", s.Node)
	return ExitOK
}

// VersionString is the version both binaries report (for the bridge,
// which the termsprawl binary runs outside this package).
func VersionString() string { return version() }
