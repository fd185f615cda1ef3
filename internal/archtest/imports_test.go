package archtest

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/termsprawl/termsprawl"

// allowed maps a package (or a prefix ending in "/...") to the import
// prefixes it may use besides the standard library.
var allowed = map[string][]string{
	"tmuxctl": {module + "/internal/tmuxenv"},
	"tools":   {"github.com/fsnotify/fsnotify", module + "/internal/tmuxenv", module + "/internal/ctllite"},
	// The engine: nodes on tmux servers. It never imports the tool server.
	"orchestrator": {module + "/tmuxctl", module + "/tools", module + "/orchestrator/hosts", module + "/orchestrator/screen", module + "/orchestrator/render", module + "/orchestrator/record", "github.com/charmbracelet/",
		// the rooms that need no node
		module + "/orchestrator/proc", module + "/orchestrator/termio", module + "/orchestrator/applog",
		// text and regex waits (a room of its own)
		module + "/orchestrator/textwait",
		// config.toml's settings (a leaf room)
		module + "/orchestrator/config",
		// semantic trees: validation, locators, lines, diffs (CONTRACT §22)
		module + "/orchestrator/semantic",
		// bubblewrap sandboxes around agents' programs (CONTRACT §27)
		module + "/orchestrator/sandbox",
		// fleet search over captures and recordings (CONTRACT §30)
		module + "/orchestrator/fleetsearch",
		// a node's semantic tree commits (CONTRACT §22)
		module + "/orchestrator/semstore",
		// terminal_query's matches and refs (CONTRACT §11)
		module + "/orchestrator/termquery",
		// the trace tools over record's registry (CONTRACT §13)
		module + "/orchestrator/traces",
		// the disk formats of the node files (a leaf room)
		module + "/orchestrator/statefile",
		// the status text and tty write of messages to humans (CONTRACT §20)
		module + "/orchestrator/notify",
		// the return of memory after a flood of output
		module + "/orchestrator/memtrim",
		// a program's environment and checks before it starts
		module + "/orchestrator/launchenv",
		// one node as an actor: its mirror, state, waits, recording
		module + "/orchestrator/node",
		// the lost nodes' table and what a loss writes
		module + "/orchestrator/lostnodes",
		// the nodes on hosts: host table, adoption, closes, host_list/remove
		module + "/orchestrator/hostnodes"},
	// One node (docs/ARCHITECTURE.md): the mirror its pump owns, its
	// published state, inputs, waits, reads, rest and idle, seed, exit
	// check, recording and crash log. It talks to the engine only through
	// its Env interface: never the engine, the tool server or another node.
	"orchestrator/node": {module + "/tmuxctl", module + "/tools", module + "/orchestrator/hosts", module + "/orchestrator/screen",
		module + "/orchestrator/render", module + "/orchestrator/record", module + "/orchestrator/proc", module + "/orchestrator/termio",
		module + "/orchestrator/applog", module + "/orchestrator/textwait", module + "/orchestrator/sandbox", module + "/orchestrator/semstore",
		module + "/orchestrator/termquery", module + "/orchestrator/statefile", module + "/orchestrator/memtrim", module + "/orchestrator/semantic",
		module + "/orchestrator/fleetsearch"},
	// The nodes on hosts (the host table, adoption, placeholders, closes
	// that wait for their host, host_list and host_remove): nodes and the
	// hosts' connections, the engine only through its Engine interface;
	// never the engine or the tool server.
	"orchestrator/hostnodes": {module + "/tmuxctl", module + "/tools", module + "/orchestrator/hosts", module + "/orchestrator/node",
		module + "/orchestrator/statefile", module + "/orchestrator/proc", module + "/orchestrator/launchenv"},
	// The tmux servers nodes live on (local shards, hosts' servers):
	// tmux and the contract's values, never nodes, the engine or the
	// tool server.
	"orchestrator/hosts": {module + "/tmuxctl", module + "/tools", module + "/orchestrator/sandbox"},
	// The engine's rooms that need no node (docs/ARCHITECTURE.md): none
	// imports the engine or the tool server. Process watching: pidfds and
	// epoll through x/sys/unix, no raw syscall numbers.
	"orchestrator/proc": {"golang.org/x/sys/unix"},
	// Key names and mouse reports: the contract's values, x/ansi's encoders.
	"orchestrator/termio": {module + "/tools", "github.com/charmbracelet/x/ansi"},
	// Application logs of a node, followed with fsnotify (CONTRACT §11).
	"orchestrator/applog": {module + "/tools", "github.com/fsnotify/fsnotify"},
	// Text and regex waits over a Source (the engine's node behind an
	// interface): the standard library only, never the engine or the
	// tool server.
	"orchestrator/textwait": {},
	// A profile to a bubblewrap argv, and bwrap's probe (CONTRACT §27):
	// the standard library only, never nodes.
	"orchestrator/sandbox": {},
	// Fleet search (CONTRACT §30): the matcher, the ordered merge, the
	// memory budget and the recordings' scan; a node is a Capture
	// function the engine hands in, never a node or tmux.
	"orchestrator/fleetsearch": {module + "/tools", module + "/orchestrator/record", "github.com/charmbracelet/x/ansi"},
	// A node program's environment and start checks: the contract's
	// values only, never nodes or tmux.
	"orchestrator/launchenv": {module + "/tools"},
	// The return of memory after a flood: the standard library only.
	"orchestrator/memtrim": {},
	// The lost nodes (CONTRACT §25, §26): their table, restores and
	// forgets, and the files a loss writes; never nodes or tmux.
	"orchestrator/lostnodes": {module + "/tools", module + "/orchestrator/statefile"},
	// The node files' formats under the state dir: pure functions of
	// (dir, id) and the contract's values; never nodes.
	"orchestrator/statefile": {module + "/tools"},
	// The trace tools: record's registry and traces, render's types for
	// the screenshot the engine draws; never nodes.
	"orchestrator/traces": {module + "/tools", module + "/orchestrator/record", module + "/orchestrator/render", module + "/orchestrator/screen"},
	// terminal_query's text side: the contract's values and x/ansi's
	// grapheme widths, never nodes.
	"orchestrator/termquery": {module + "/tools", "github.com/charmbracelet/x/ansi"},
	// A node's semantic tree commits and the semantic tools' answers from
	// them: the trees' room and the contract's values, never nodes.
	"orchestrator/semstore": {module + "/orchestrator/semantic", module + "/tools"},
	// Semantic trees (CONTRACT §22): pure, the standard library only.
	"orchestrator/semantic": {module + "/tools"},
	// The probe programs link to publish their trees: the client, and
	// Bubble Tea v2 for its helpers; never the engine.
	"probe":               {module + "/tools", "charm.land/bubbletea/v2", "github.com/charmbracelet/x/ansi"},
	"orchestrator/screen": {module + "/tools", module + "/orchestrator/render", "github.com/charmbracelet/"},
	// PNG screenshots from a cell grid: fonts and pixels, and the shared
	// memory budget of draws in flight (the contract's MemoryBudget).
	"orchestrator/render": {"golang.org/x/image/", module + "/tools"},
	// Recordings and traces, replayed through the same mirror.
	// The replay's tracker steps x/ansi's parser, the one x/vt runs.
	"orchestrator/record": {module + "/tools", module + "/orchestrator/screen", "github.com/charmbracelet/x/ansi"},
	// The tool server drives the engine; tmux is the engine's business.
	// It mounts the web monitor and feeds it through monitor's interfaces.
	"orchestrator/toolserver": {module + "/tools", module + "/orchestrator", module + "/orchestrator/monitor",
		module + "/orchestrator/agentstate", module + "/orchestrator/notify", module + "/orchestrator/worktree",
		module + "/orchestrator/config", module + "/orchestrator/trust", module + "/orchestrator/sandbox",
		module + "/orchestrator/policy", module + "/orchestrator/usage", module + "/orchestrator/tables"},
	// The tool server's tables on disk (their group-commit persister):
	// the contract's values only, never nodes, the engine or HTTP.
	"orchestrator/tables": {module + "/tools"},
	// Git worktrees (CONTRACT §21): the user's git CLI only, never nodes,
	// the engine or the tool server.
	"orchestrator/worktree": {},
	// Agent state (CONTRACT §20): a pure derivation from evidence.
	"orchestrator/agentstate": {module + "/tools"},
	// config.toml (CONTRACT §28): the TOML library and fsnotify for
	// reloads; never nodes, the engine or the tool server.
	"orchestrator/config": {"github.com/BurntSushi/toml", "github.com/fsnotify/fsnotify"},
	// The human's approvals of a repository's .termsprawl/ files: the
	// standard library only.
	"orchestrator/trust": {},
	// Notifications (CONTRACT §20): targets, modes, the queue and its
	// sender; the tmux and terminal targets are handed in as functions.
	"orchestrator/notify": {module + "/tools"},
	// Permission policies and the audit log (CONTRACT §28): rules, a real
	// shell parser, TOML for a repository's file; knows nothing of nodes.
	// Usage from agents' OpenTelemetry (CONTRACT §28): the OTLP protobuf
	// types (no gRPC) and protobuf's codecs; knows nothing of nodes.
	"orchestrator/usage":  {"go.opentelemetry.io/proto/otlp/", "google.golang.org/protobuf/"},
	"orchestrator/policy": {module + "/orchestrator/config", "mvdan.cc/sh/v3/", "github.com/BurntSushi/toml", module + "/tools"},
	// The read-only web monitor: the contract's value types and the cell
	// grid; it reads the engine and the tool server only through the
	// interfaces it defines (Engine, Side), so it imports neither.
	"orchestrator/monitor": {module + "/tools", module + "/orchestrator/render"},
	// cli is linked by termsprawlctl: no mcp-go (the MCP server is in the
	// termsprawl binary, internal/mcpserve).
	"cli": {module + "/tools", module + "/orchestrator", "github.com/alecthomas/kong",
		// `termsprawl replay` reads recordings without the orchestrator
		module + "/orchestrator/record",
		// shell completion (docs/CHOICES.md)
		"github.com/willabides/kongplete", "github.com/posener/complete",
		// the hot path's parser and the hooks' shared parts
		module + "/internal/ctllite",
		// `termsprawl config` and `termsprawl trust` read the state
		// directory's files themselves
		module + "/orchestrator/config", module + "/orchestrator/trust",
		// doctor probes bwrap (CONTRACT §27); `termsprawl audit` and
		// `policy test` read the audit log and judge rules with the
		// policy room's own code
		module + "/orchestrator/sandbox", module + "/orchestrator/policy"},
	// The dashboard (CONTRACT §19): a client of the tool server (the event
	// stream and Call), never the engine; Bubble Tea v2.
	"cli/dash": {module + "/tools", "charm.land/", "github.com/charmbracelet/", module + "/probe"},
	// cmd/termsprawl wires the MCP engine (internal/mcpserve, mcp-go) into
	// the tool server, plugs the dashboard (cli/dash, Bubble Tea) into cli,
	// and runs the stdio bridge and the full termsprawlctl; cmd/termsprawlctl
	// links only internal/ctllite (TestCtlLinksOnlyTheStandardLibrary).
	"cmd/...": {module + "/cli", module + "/internal/mcpserve", module + "/orchestrator/toolserver", module + "/cli/dash", module + "/internal/ctllite"},
	// termsprawlctl's hot path: the standard library only (its binary
	// links nothing else; TestCtlLinksOnlyTheStandardLibrary).
	"internal/ctllite": {},
	// MCP from the operation table, built with mcp-go (stdio bridge and
	// the protocol engine behind /mcp).
	"internal/mcpserve":   {module + "/tools", "github.com/mark3labs/mcp-go/"},
	"internal/schematest": {module + "/tools", "github.com/santhosh-tekuri/jsonschema/"},
	// A fake orchestrator behind the real /call handler, for the clients' tests.
	"internal/fakeapi": {module + "/tools"},
	// The ssh and tmux test fixtures skip (or fail in CI) through testenv's one rule.
	"internal/sshtest":  {module + "/internal/testenv"},
	"internal/tmuxtest": {module + "/internal/testenv"},
	// Headless Chromium for the monitor's tests installs what it needs
	// through testenv.
	"internal/browsertest": {module + "/internal/testenv"},
	"internal/...":         {},
}

// cliEngineFiles are the only files of cli that may import the engine or
// the tool server: `termsprawl up` runs them in-process; every other
// command goes through the client.
var cliEngineFiles = map[string]bool{"up.go": true}

type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

func rulesFor(rel string) ([]string, bool) {
	if r, ok := allowed[rel]; ok {
		return r, true
	}
	for k, r := range allowed {
		if p, ok := strings.CutSuffix(k, "/..."); ok && (rel == p || strings.HasPrefix(rel, p+"/")) {
			return r, true
		}
	}
	return nil, false
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	std := map[string]bool{}
	var pkgs []pkg
	dec := json.NewDecoder(out)
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	isStd := func(path string) bool {
		if v, ok := std[path]; ok {
			return v
		}
		first, _, _ := strings.Cut(path, "/")
		v := !strings.Contains(first, ".")
		std[path] = v
		return v
	}
	if len(pkgs) < 3 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		rules, ok := rulesFor(rel)
		if !ok {
			t.Errorf("package %s has no import rule: add it to allowed", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if isStd(imp) {
				continue
			}
			okImp := false
			for _, prefix := range rules {
				if imp == prefix || strings.HasPrefix(imp, prefix) && (strings.HasSuffix(prefix, "/") || strings.HasPrefix(imp, prefix+"/")) {
					okImp = true
				}
			}
			if !okImp {
				t.Errorf("%s imports %s, which the design does not allow", p.ImportPath, imp)
			}
		}
	}
}

// Only cliEngineFiles of cli import the engine or the tool server.
func TestCLIUsesTheEngineOnlyInUp(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../cli/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no cli files found: %v", err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || cliEngineFiles[filepath.Base(f)] {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			// The recordings' reader is no engine: replay works with
			// the orchestrator down.
			// Nor are the rooms that read the state directory's
			// files (config.toml, trust.json, audit.jsonl) and bwrap's
			// probe: termsprawl config, trust, audit, policy test and
			// doctor work with it down.
			stateRooms := path == module+"/orchestrator/config" || path == module+"/orchestrator/trust" || path == module+"/orchestrator/policy" || path == module+"/orchestrator/sandbox"
			if strings.HasPrefix(path, module+"/orchestrator") && path != module+"/orchestrator/record" && !stateRooms {
				t.Errorf("%s imports %s: only %v may (everything else goes through the client)", f, path, cliEngineFiles)
			}
		}
	}
}
