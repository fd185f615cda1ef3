// Package cli implements termsprawl's command-line surfaces on top of the
// one tool client (tools.Call):
//
//   - MainCtl is termsprawlctl, the agent-side helper (CONTRACT §5):
//     doctor, call OP [JSON_ARGS] and mcp, plus guide, help, version and
//     completion. The session file is --session anywhere in argv, else
//     TERMSPRAWL_SESSION_FILE, else <state>/sessions/operator.json when it
//     is readable (CONTRACT §10). Operation names and arguments are
//     checked against the operation table before any file is read or any
//     connection is made.
//   - termsprawlctl mcp (CONTRACT §6) resolves the session and executes
//     the MCP stdio bridge of the termsprawl binary (`termsprawl
//     mcp-bridge`, package internal/mcpserve), found next to termsprawlctl
//     or on PATH, so that termsprawlctl never links mcp-go;
//     `mcp --print-http` prints the Streamable HTTP URL and header.
//   - MainTermsprawl is the human's termsprawl CLI (CONTRACT §7): up,
//     down, new, agent, ls, attach, open, snapshot, send, kill, dialogs,
//     answer and doctor, plus help, version and completion; press, type,
//     paste, interrupt (keys.go), task and answer --choice (tasks.go),
//     recordings and replay NODE|latest (recordings.go). Every command
//     that talks to the orchestrator uses the operator session file
//     <state>/sessions/operator.json, and phrases errors in its own
//     commands (words.go), never in operation names.
//
// Exit codes everywhere: 0 ok, 1 the app said no (ok:false), 2 usage
// (nothing was done), 3 termsprawl is not running (no orchestrator
// answers: tools.ErrNotRunning, or no operator session yet), 4
// (termsprawlctl call) an input's wait timed out but the input was sent.
// `termsprawl down` with nothing running is 0.
//
// docs/CHOICES.md ("The CLIs") lists the choices made where the contract
// is silent. A few more, of this package only:
//
//   - termsprawlctl doctor prints the whole session_info envelope, like
//     call. A relative --session path is made absolute.
//   - termsprawl down polls (every 50 ms, at most 10 s) for the pid to be
//     gone, since there is no portable event for an unrelated process
//     exiting; it refuses to signal a pid that is neither the endpoint's
//     nor a process named termsprawl (a stale lock whose pid was reused).
//   - termsprawl up --detach accepts the endpoint.json whose pid is the
//     child's and whose instance_id differs from the one found before; its
//     log is <state>/termsprawl.log.
//
// The package imports tools, orchestrator (only to run it for `up`), kong,
// kongplete and posener/complete (completion) and the standard library,
// never mcp-go; nothing imports it but the two mains.
package cli
