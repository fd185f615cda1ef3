package toolserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// How each known agent is wired to termsprawl without touching the
// user's own configuration (CONTRACT §16; the table in README.md):
//
//	claude    --settings <state>/agent-tools/claude-settings.json (hooks) and --mcp-config <state>/agent-tools/mcp.json
//	codex     -c mcp_servers.termsprawl.*, -c notify=[termsprawlctl, hook, codex, notify] and -c hooks.EVENT
//	          (SessionStart, UserPromptSubmit, PermissionRequest, Stop) with --dangerously-bypass-hook-trust
//	gemini    GEMINI_CLI_HOME=<state>/agent-tools/gemini-home: its .gemini/settings.json is the user's
//	          settings plus hooks and mcpServers, every other entry a link to the user's ~/.gemini
//	opencode  OPENCODE_CONFIG_DIR=<state>/agent-tools/opencode with termsprawl's plugin (events to hooks, permission
//	          requests to dialogs) and OPENCODE_CONFIG_CONTENT with the MCP server (opencodewire.go)

// PermissionHookTimeout is the timeout termsprawl writes for Claude
// Code's PermissionRequest hook: the dialog's 10 minutes and a margin for
// the hook to print its answer.
const PermissionHookTimeout = int(tools.MaxDialogTimeout/time.Second) + 30 // seconds

// stateHookTimeout is the timeout of the state hooks, in seconds.
const stateHookTimeout = 30

// installHint says how to get each agent.
var installHint = map[string]string{
	"claude":   "npm install -g @anthropic-ai/claude-code",
	"codex":    "npm install -g @openai/codex",
	"gemini":   "npm install -g @google/gemini-cli",
	"opencode": "npm install -g opencode-ai",
}

// checkAgentProgram refuses a known agent whose program is not on the
// orchestrator's PATH (the node inherits it), before any node exists.
func checkAgentProgram(kind, program string) error {
	if _, err := exec.LookPath(program); err != nil {
		return tools.Errorf(tools.KindNotRun, "%s is not installed: no %q on PATH. Install it (%s) and start termsprawl again so it sees the new PATH, or name the program: termsprawl agent %s -- /path/to/%s",
			kind, program, installHint[kind], kind, program).WithDetails("program", program)
	}
	return nil
}

// isAgentProgram reports whether program is the agent's own (by base
// name), so `termsprawl agent claude -- claude -p …` is wired too.
func isAgentProgram(kind, program string) bool {
	def := agentCommands[kind]
	return len(def) > 0 && filepath.Base(program) == def[0]
}

// claudeHookEvents are the Claude Code events termsprawl hooks into.
var claudeHookEvents = []string{"SessionStart", "UserPromptSubmit", "PermissionRequest", "Notification", "Stop", "StopFailure"}

// claudeSettings is the settings layer passed with --settings.
func (s *Server) claudeSettings() map[string]any {
	hooks := map[string]any{}
	for _, ev := range claudeHookEvents {
		h := map[string]any{"type": "command", "command": s.ctlPath, "args": []string{"hook", "claude", ev}, "timeout": stateHookTimeout}
		if ev == "PermissionRequest" {
			h["timeout"] = PermissionHookTimeout
			// A hook that cannot start, times out or answers
			// nonsense blocks the action instead of letting it through.
			h["onFailure"] = "block"
			h["statusMessage"] = "Waiting for a human in termsprawl (termsprawl dialogs)"
		}
		hooks[ev] = []any{map[string]any{"hooks": []any{h}}}
	}
	return map[string]any{"hooks": hooks}
}

// geminiHookEvents maps Gemini CLI's events to the hook's; BeforeTool is
// the permission gate, for the tools Gemini CLI confirms (geminiAskTools).
var geminiHookEvents = []string{"SessionStart", "BeforeAgent", "AfterAgent", "Notification", "BeforeTool"}

// geminiAskTools matches the tools Gemini CLI asks about by default.
const geminiAskTools = "^(run_shell_command|write_file|replace)$"

// GeminiHomeDir is Gemini CLI's home overlay, beneath the user's
// ~/.gemini (GEMINI_CLI_HOME=~/.gemini/termsprawl-home): its .gemini
// holds the user's settings with termsprawl's hooks and MCP server
// added, and links to every other entry of the user's ~/.gemini. Gemini
// CLI 0.61.0 reads a system defaults file only when it and every
// directory above it belong to uid 0 — never true inside the workspace
// sandbox, nor for a user who is not root — and it writes its global
// directory by a temporary file and a rename, so the overlay lives
// where the workspace sandbox lets Gemini write (docs/CHOICES.md).
const GeminiHomeDir = "termsprawl-home"

// geminiHome writes the overlay and returns its path.
func (s *Server) geminiHome() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", tools.Errorf(tools.KindNotRun, "gemini: no home directory: %v", err)
	}
	userDir := filepath.Join(home, ".gemini")
	root := filepath.Join(userDir, GeminiHomeDir)
	gdir := filepath.Join(root, ".gemini")
	// ~/.gemini and its tmp (where its sessions live, for --resume) are
	// what Gemini CLI makes on its first run.
	for _, d := range []string{gdir, filepath.Join(userDir, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", fmt.Errorf("make %s: %w", d, err)
		}
	}
	base := map[string]any{}
	settings := filepath.Join(userDir, "settings.json")
	if b, err := tools.ReadFileBounded(settings, 1<<20); err == nil {
		if err := json.Unmarshal(b, &base); err != nil {
			return "", tools.Errorf(tools.KindNotRun, "gemini's settings %s are not JSON termsprawl can extend: %v", settings, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", tools.Errorf(tools.KindNotRun, "read gemini's settings: %v", err)
	}
	d, err := s.geminiWired(base)
	if err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return "", err
	}
	if err := tools.WriteFileAtomic(filepath.Join(gdir, "settings.json"), append(b, '\n')); err != nil {
		return "", fmt.Errorf("write gemini's settings overlay: %w", err)
	}
	// The user's entries, linked (a dangling link would fail Gemini's
	// mkdir of a directory it makes itself: entries the user lacks are
	// made by Gemini in the overlay). Its writes through a link land in
	// the user's own ~/.gemini, as without termsprawl; a file it replaces
	// by a rename becomes the overlay's own.
	var names []string
	if ents, err := os.ReadDir(userDir); err == nil {
		for _, e := range ents {
			if e.Name() != GeminiHomeDir {
				names = append(names, e.Name())
			}
		}
	}
	for _, n := range names {
		if n == "settings.json" || n == "." || n == ".." || strings.ContainsRune(n, '/') {
			continue
		}
		link, target := filepath.Join(gdir, n), filepath.Join(userDir, n)
		if got, err := os.Readlink(link); err == nil && got == target {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			return "", fmt.Errorf("link gemini's %s: %w", n, err)
		}
	}
	return root, nil
}

// geminiWired is base (the user's settings) with termsprawl's hooks and
// MCP server added.
func (s *Server) geminiWired(base map[string]any) (map[string]any, error) {
	hooks, _ := base["hooks"].(map[string]any)
	if hooks == nil {
		hooks = map[string]any{}
	}
	for _, ev := range geminiHookEvents {
		list, _ := hooks[ev].([]any)
		h := map[string]any{"type": "command", "name": "termsprawl-" + ev,
			"command": shellWords(s.ctlPath, "hook", "gemini", ev), "timeout": stateHookTimeout * 1000}
		def := map[string]any{"hooks": []any{h}}
		if ev == "BeforeTool" {
			h["timeout"] = PermissionHookTimeout * 1000
			def["matcher"] = geminiAskTools
		}
		hooks[ev] = append(list, def)
	}
	base["hooks"] = hooks
	servers, _ := base["mcpServers"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	servers["termsprawl"] = map[string]any{"command": s.ctlPath, "args": []string{"mcp"}}
	base["mcpServers"] = servers
	return base, nil
}

// codexHookEvents are the Codex hooks termsprawl runs (Codex's hooks
// take Claude Code's JSON and answers).
var codexHookEvents = []string{"SessionStart", "UserPromptSubmit", "PermissionRequest", "Stop"}

// codexArgs wire Codex for one node with -c overrides (a session layer
// over the user's config.toml, never written): the MCP server, notify
// (turn ends, also where hooks are turned off) and inline hooks. Codex
// runs a hook only once it is trusted (a hash it writes into the user's
// config.toml after a review in /hooks); --dangerously-bypass-hook-trust
// runs this invocation's hooks without that record (docs/CHOICES.md).
func (s *Server) codexArgs() []string {
	args := []string{
		"-c", fmt.Sprintf("mcp_servers.termsprawl.command=%q", s.ctlPath), "-c", `mcp_servers.termsprawl.args=["mcp"]`,
		"-c", fmt.Sprintf("notify=[%q,\"hook\",\"codex\",\"notify\"]", s.ctlPath),
		"--dangerously-bypass-hook-trust",
	}
	for _, ev := range codexHookEvents {
		timeout := stateHookTimeout
		if ev == "PermissionRequest" {
			timeout = PermissionHookTimeout
		}
		args = append(args, "-c", fmt.Sprintf("hooks.%s=[{hooks=[{type=\"command\",command=%q,timeout=%d}]}]",
			ev, shellWords(s.ctlPath, "hook", "codex", ev), timeout))
	}
	return args
}

// shellWords joins words for a shell, each single-quoted.
func shellWords(words ...string) string {
	out := ""
	for i, w := range words {
		if i > 0 {
			out += " "
		}
		q := "'"
		for _, r := range w {
			if r == '\'' {
				q += `'\''`
			} else {
				q += string(r)
			}
		}
		out += q + "'"
	}
	return out
}

// wireAgent writes the files an agent kind is pointed at and returns the
// arguments to append to its default command and the environment to add.
func (s *Server) wireAgent(kind string) ([]string, map[string]string, error) {
	env := map[string]string{}
	dir := filepath.Join(s.stateDir, tools.AgentToolsDir)
	write := func(name string, v any) (string, error) {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return "", fmt.Errorf("encode %s: %w", name, err)
		}
		p := filepath.Join(dir, name)
		return p, tools.WriteFileAtomic(p, append(b, '\n'))
	}
	reg := map[string]any{"mcpServers": map[string]any{"termsprawl": map[string]any{"command": s.ctlPath, "args": []string{"mcp"}}}}
	mcpPath, err := write("mcp.json", reg)
	if err != nil {
		return nil, nil, err
	}
	env["TERMSPRAWL_MCP_CONFIG"] = mcpPath
	switch kind {
	case "claude":
		settings, err := write("claude-settings.json", s.claudeSettings())
		if err != nil {
			return nil, nil, err
		}
		return []string{"--settings", settings, "--mcp-config", mcpPath}, env, nil
	case "codex":
		return s.codexArgs(), env, nil
	case "gemini":
		p, err := s.geminiHome()
		if err != nil {
			return nil, nil, err
		}
		env["GEMINI_CLI_HOME"] = p
		return nil, env, nil
	case "opencode":
		oc, err := s.opencodeEnv() // opencodewire.go
		if err != nil {
			return nil, nil, err
		}
		for k, v := range oc {
			env[k] = v
		}
		return nil, env, nil
	}
	return nil, env, nil
}
