package toolserver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// fakeAgents puts programs named like the agents on PATH; each writes its
// argv (one per line) and the wiring variables into <out>/<name>.txt.
func fakeAgents(t *testing.T) string {
	t.Helper()
	bin, out := t.TempDir(), t.TempDir()
	for _, name := range []string{"claude", "codex", "gemini", "opencode"} {
		script := "#!/bin/sh\n{ for a in \"$@\"; do printf '%s\\n' \"$a\"; done; echo \"GEMINI=$GEMINI_CLI_HOME\"; echo \"OPENCODE=$OPENCODE_CONFIG_CONTENT\"; } > " +
			filepath.Join(out, name+".tmp") + " && mv " + filepath.Join(out, name+".tmp") + " " + filepath.Join(out, name+".txt") + "\nexec sleep 60\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return out
}

// startWithCtl serves like apiStart, with a termsprawlctl path so agents
// get wired.
func startWithCtl(t *testing.T, tmux *tmuxtest.Server, dir, ctl string) *apiServe {
	t.Helper()
	return apiStartWith(t, tmux, dir, orchestrator.Config{CtlPath: ctl})
}

func waitFile(t *testing.T, path string) string {
	t.Helper()
	var b []byte
	if !testenv.Until(20*time.Second, func() bool { var err error; b, err = os.ReadFile(path); return err == nil }) {
		t.Fatalf("%s never appeared", path)
	}
	return string(b)
}

// Each agent kind gets its wiring, in the documented formats of its hooks
// (Claude Code's settings hooks; Codex's notify; Gemini CLI's settings
// layer; opencode's config), without a file of the user's touched.
func TestAgentWiring(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 8 s on a loaded 2-core machine")
	out := fakeAgents(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("GEMINI_CLI_SYSTEM_DEFAULTS_PATH", "")
	tmux, dir := apiNewState(t)
	ctl := "/opt/termsprawl/bin/termsprawlctl"
	s := startWithCtl(t, tmux, dir, ctl)
	op := s.op()
	for _, kind := range []string{"claude", "codex", "gemini", "opencode"} {
		// Unsandboxed: the fake agents write their argv outside their
		// directory, and workspace would make its mount points (~/.cache,
		// ~/go, ~/.npm, the agent's own directory) in the home.
		apiMutate(t, op, "agent_launch", apiM{"agent": kind, "sandbox": "none"})
	}

	argv := strings.Split(waitFile(t, filepath.Join(out, "claude.txt")), "\n")
	settingsPath := filepath.Join(dir, tools.AgentToolsDir, "claude-settings.json")
	mcpPath := filepath.Join(dir, tools.AgentToolsDir, "mcp.json")
	if strings.Join(argv[:4], " ") != "--settings "+settingsPath+" --mcp-config "+mcpPath {
		t.Fatalf("claude argv %q", argv)
	}
	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type, Command, OnFailure string
				Args                     []string
				Timeout                  int
			}
		}
	}
	raw, err := os.ReadFile(settingsPath)
	if err != nil || json.Unmarshal(raw, &settings) != nil {
		t.Fatalf("claude settings: %v\n%s", err, raw)
	}
	for _, ev := range claudeHookEvents {
		hs := settings.Hooks[ev]
		if len(hs) != 1 || len(hs[0].Hooks) != 1 {
			t.Fatalf("hook %s: %+v", ev, hs)
		}
		h := hs[0].Hooks[0]
		if h.Type != "command" || h.Command != ctl || strings.Join(h.Args, " ") != "hook claude "+ev {
			t.Fatalf("hook %s: %+v", ev, h)
		}
		if ev == "PermissionRequest" && (h.Timeout != int(tools.MaxDialogTimeout/time.Second)+30 || h.OnFailure != "block") {
			t.Fatalf("the permission hook must outlive the dialog and block on failure: %+v", h)
		}
	}

	codex := waitFile(t, filepath.Join(out, "codex.txt"))
	for _, want := range []string{`mcp_servers.termsprawl.command="` + ctl + `"`, `notify=["` + ctl + `","hook","codex","notify"]`,
		"--dangerously-bypass-hook-trust", `hooks.PermissionRequest=[{hooks=[{type="command",command="'` + ctl + `' 'hook' 'codex' 'PermissionRequest'",timeout=630}]}]`,
		`hooks.Stop=[{hooks=[{type="command",command="'` + ctl + `' 'hook' 'codex' 'Stop'",timeout=30}]}]`} {
		if !strings.Contains(codex, want) {
			t.Fatalf("codex argv lacks %s:\n%s", want, codex)
		}
	}

	gem := waitFile(t, filepath.Join(out, "gemini.txt"))
	gemHome := filepath.Join(home, ".gemini", GeminiHomeDir)
	defaults := filepath.Join(gemHome, ".gemini", "settings.json")
	if !strings.Contains(gem, "GEMINI="+gemHome+"\n") {
		t.Fatalf("gemini env:\n%s", gem)
	}
	var gd struct {
		Hooks map[string][]struct {
			Matcher string
			Hooks   []struct {
				Type, Command string
				Timeout       int
			}
		}
		MCPServers map[string]struct{ Command string } `json:"mcpServers"`
	}
	raw, err = os.ReadFile(defaults)
	if err != nil || json.Unmarshal(raw, &gd) != nil {
		t.Fatalf("gemini defaults: %v\n%s", err, raw)
	}
	for _, ev := range geminiHookEvents {
		timeout, matcher := stateHookTimeout*1000, ""
		if ev == "BeforeTool" {
			// The permission gate: the dialog's life, the confirmed tools.
			timeout, matcher = PermissionHookTimeout*1000, geminiAskTools
		}
		if h := gd.Hooks[ev]; len(h) != 1 || h[0].Hooks[0].Command != "'"+ctl+"' 'hook' 'gemini' '"+ev+"'" || h[0].Hooks[0].Timeout != timeout || h[0].Matcher != matcher {
			t.Fatalf("gemini hook %s: %+v", ev, h)
		}
	}
	if gd.MCPServers["termsprawl"].Command != ctl {
		t.Fatalf("gemini mcpServers: %s", raw)
	}

	oc := waitFile(t, filepath.Join(out, "opencode.txt"))
	if !strings.Contains(oc, `OPENCODE={"mcp":{"termsprawl":{"command":["`+ctl+`","mcp"],"enabled":true,"type":"local"}}}`) {
		t.Fatalf("opencode env:\n%s", oc)
	}
	// The overlay's other entries link to the user's ~/.gemini.
	if target, err := os.Readlink(filepath.Join(gemHome, ".gemini", "tmp")); err != nil || target != filepath.Join(home, ".gemini", "tmp") {
		t.Fatalf("gemini overlay link: %q %v", target, err)
	}
	// Only what Gemini CLI makes on its first run (~/.gemini/tmp, empty)
	// and the overlay.
	if entries, _ := os.ReadDir(home); len(entries) != 1 || entries[0].Name() != ".gemini" {
		t.Fatalf("the user's home was touched: %v", entries)
	}
	if entries, _ := os.ReadDir(filepath.Join(home, ".gemini")); len(entries) != 2 || entries[0].Name() != GeminiHomeDir || entries[1].Name() != "tmp" {
		t.Fatalf("the user's ~/.gemini was touched: %v", entries)
	}
}

// An agent kind that is not installed is refused before a node exists,
// naming the program and how to install it.
func TestAgentNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir()+string(os.PathListSeparator)+filepath.Dir(mustLook(t, "tmux")))
	tmux, dir := apiNewState(t)
	s := startWithCtl(t, tmux, dir, "/opt/termsprawl/bin/termsprawlctl")
	op := s.op()
	for kind, hint := range installHint {
		res := apiFail(t, op, "agent_launch", apiM{"agent": kind}, tools.KindNotRun)
		if !strings.Contains(res.Error, kind+" is not installed") || !strings.Contains(res.Error, hint) {
			t.Fatalf("%s: %q", kind, res.Error)
		}
	}
	var l tools.NodeList
	apiOK(t, op, "terminal_list", nil, &l)
	if len(l.Terminals) != 0 {
		t.Fatalf("a node exists after refused launches: %+v", l)
	}
}

func mustLook(t *testing.T, prog string) string {
	t.Helper()
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, prog)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	testenv.SkipOrFail(t, "%s not on PATH", prog)
	return ""
}
