package toolserver

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// OpenCode 1.18.33 is wired per node by its own mechanisms (CONTRACT
// §29), never by the user's ~/.config/opencode:
//
//   - OPENCODE_CONFIG_DIR=<state>/agent-tools/opencode, a config directory
//     OpenCode loads besides the user's global one, holding termsprawl's
//     plugin (plugins/termsprawl.js): OpenCode's events (session.status,
//     session.idle, session.error, permission.asked, permission.replied)
//     become `termsprawlctl hook opencode EVENT` calls in Claude Code's
//     hook JSON, and a permission request a termsprawl dialog whose
//     answer the plugin gives OpenCode (permission.reply);
//   - OPENCODE_CONFIG_CONTENT with termsprawl's MCP server (OpenCode
//     merges it over the user's files).
//
// OpenCode itself installs its plugin package (@opencode-ai/plugin) into
// every config directory it loads, ours included (package.json,
// node_modules, .gitignore there): termsprawl's plugin needs none of it.

//go:embed opencode_plugin.js
var opencodePlugin string

// OpencodeConfigDir is the config directory termsprawl points OpenCode
// at, beneath the state directory.
const OpencodeConfigDir = "opencode"

// opencodePluginSource is the plugin with the termsprawlctl path filled in.
func opencodePluginSource(ctlPath string) (string, error) {
	ctl, err := json.Marshal(ctlPath)
	if err != nil {
		return "", err
	}
	return strings.Replace(opencodePlugin, "__TERMSPRAWL_CTL__", string(ctl), 1), nil
}

// opencodeEnv writes the plugin and returns OpenCode's environment.
func (s *Server) opencodeEnv() (map[string]string, error) {
	dir := filepath.Join(s.stateDir, tools.AgentToolsDir, OpencodeConfigDir)
	if err := os.MkdirAll(filepath.Join(dir, "plugins"), 0o700); err != nil {
		return nil, fmt.Errorf("make OpenCode's config directory: %w", err)
	}
	// OpenCode writes a .gitignore into each config directory it loads
	// when there is none, and dies if it cannot (EROFS: the directory is
	// read-only inside the workspace sandbox); its dependency install
	// there only logs a warning. So the file is there before it starts.
	gi := filepath.Join(dir, ".gitignore")
	if _, err := os.Lstat(gi); errors.Is(err, fs.ErrNotExist) {
		if err := tools.WriteFileAtomic(gi, []byte("node_modules\npackage.json\npackage-lock.json\nbun.lock\n.gitignore\n")); err != nil {
			return nil, fmt.Errorf("write OpenCode's .gitignore: %w", err)
		}
	}
	src, err := opencodePluginSource(s.ctlPath)
	if err != nil {
		return nil, err
	}
	if err := tools.WriteFileAtomic(filepath.Join(dir, "plugins", "termsprawl.js"), []byte(src)); err != nil {
		return nil, fmt.Errorf("write OpenCode's plugin: %w", err)
	}
	b, err := json.Marshal(map[string]any{"mcp": map[string]any{"termsprawl": map[string]any{
		"type": "local", "command": []string{s.ctlPath, "mcp"}, "enabled": true}}})
	if err != nil {
		return nil, err
	}
	return map[string]string{"OPENCODE_CONFIG_DIR": dir, "OPENCODE_CONFIG_CONTENT": string(b)}, nil
}
