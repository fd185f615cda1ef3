// Package policy decides an agent's permission request by rules, before
// it reaches a human (CONTRACT §28): rules in Claude Code's syntax
// (`Bash(git status)`, `Bash(npm run test:*)`, `Edit(src/**)`,
// `Read(./.env)`, `WebFetch(domain:example.com)`, `mcp__server__tool`, a
// bare tool name) at the scopes a caller layers (fleet, agent kind, an
// approved repository file, a node's named table), `deny` over `ask` over
// `allow`, and undecided when no rule decides. A shell command is
// allowed only when every simple command in it is (parsed with
// mvdan.cc/sh); command and process substitution, `eval`/`source`/`.`,
// coprocesses and redirections outside the node's directory are never
// allowed by a rule. It also keeps the audit log (audit.go). It knows
// nothing of nodes: a request carries its tool, input and directory.
package policy

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"
)

// Rule is one parsed rule: a tool and, optionally, a pattern.
type Rule struct {
	// Text is the rule as written.
	Text string
	// Tool is the tool name (`Bash`, `Edit`, `mcp__server__tool`, or
	// `mcp__server` for every tool of a server).
	Tool string
	// Pattern is what is in the parentheses; "" for a bare tool name
	// (every use of the tool).
	Pattern string
	hasArgs bool
}

var toolName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// ParseRule parses one rule. Its errors say what is wrong and how to
// write it instead.
func ParseRule(s string) (Rule, error) {
	r := Rule{Text: s}
	if strings.TrimSpace(s) != s || s == "" {
		return r, fmt.Errorf("rule %q: empty or with spaces around it: write Tool or Tool(pattern), e.g. \"Bash(git status)\"", s)
	}
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if strings.HasSuffix(s, ")") {
			return r, fmt.Errorf("rule %q has a \")\" but no \"(\": write Tool(pattern), e.g. \"Bash(git status)\"", s)
		}
		if !toolName.MatchString(s) {
			return r, fmt.Errorf("rule %q is not a tool name (letters, digits, _ . -): write Tool or Tool(pattern), e.g. \"Read\" or \"Bash(npm run test:*)\"", s)
		}
		r.Tool = s
		return r, nil
	}
	r.Tool = s[:open]
	if !toolName.MatchString(r.Tool) {
		return r, fmt.Errorf("rule %q: %q before \"(\" is not a tool name: write Tool(pattern), e.g. \"Bash(git status)\"", s, r.Tool)
	}
	if !strings.HasSuffix(s, ")") {
		return r, fmt.Errorf("rule %q has no closing \")\": write %s(PATTERN), e.g. \"Bash(git status)\" or \"Bash(npm run test:*)\"", s, r.Tool)
	}
	r.Pattern, r.hasArgs = s[open+1:len(s)-1], true
	if strings.TrimSpace(r.Pattern) == "" {
		return r, fmt.Errorf("rule %q has an empty pattern: write %s for every use of the tool, or %s(PATTERN)", s, r.Tool, r.Tool)
	}
	if strings.ContainsAny(r.Pattern, "\n\r\x00") {
		return r, fmt.Errorf("rule %q has a line break or NUL in its pattern: rules are one line", s)
	}
	if isPathTool(r.Tool) {
		if _, err := compilePath(r.Pattern, "/x", "/x"); err != nil {
			return r, fmt.Errorf("rule %q: %w", s, err)
		}
	}
	if r.Tool == "WebFetch" && strings.HasPrefix(r.Pattern, "domain:") && strings.TrimPrefix(r.Pattern, "domain:") == "" {
		return r, fmt.Errorf("rule %q names no domain: write WebFetch(domain:example.com)", s)
	}
	return r, nil
}

// String is the rule as written.
func (r Rule) String() string { return r.Text }

// ShellTools are the tool names whose input is a shell command (the
// `command` field) and that `Bash(…)` rules govern: Claude Code's Bash
// and the names other agent kinds use for the same. A new agent kind
// whose shell tool has another name adds it here, nothing else.
var ShellTools = map[string]bool{
	"Bash": true, "bash": true, "shell": true, "exec_command": true, "local_shell": true,
	"run_shell_command": true, "container.exec": true,
}

// editTools and readTools are the tools `Edit(…)` and `Read(…)` rules
// govern, as in Claude Code (Edit rules apply to every tool that edits
// files, Read rules to every tool that reads them).
var (
	editTools = map[string]bool{"Edit": true, "Write": true, "MultiEdit": true, "NotebookEdit": true,
		"edit": true, "write": true, "apply_patch": true, "write_file": true, "replace": true}
	readTools = map[string]bool{"Read": true, "Grep": true, "Glob": true, "LS": true,
		"read": true, "read_file": true, "read_many_files": true, "glob": true, "grep": true, "list_directory": true}
)

func isPathTool(tool string) bool { return tool == "Edit" || tool == "Read" || tool == "Write" }

// governs reports whether the rule's tool covers the request's tool.
func (r Rule) governs(tool string) bool {
	switch {
	case r.Tool == tool:
		return true
	case r.Tool == "Bash":
		return ShellTools[tool]
	case r.Tool == "Edit":
		return editTools[tool]
	case r.Tool == "Read":
		return readTools[tool]
	case strings.HasPrefix(r.Tool, "mcp__") && !r.hasArgs:
		// mcp__server and mcp__server__* cover every tool of the server.
		server := strings.TrimSuffix(r.Tool, "__*")
		return strings.Count(server, "__") == 1 && strings.HasPrefix(tool, server+"__")
	}
	return false
}

// matchShellText matches a Bash pattern against one command's text:
// `PREFIX:*` is the command PREFIX alone or followed by a space and
// anything; a pattern with `*` elsewhere is a wildcard match over the
// whole text (`*` matches anything, spaces included); otherwise exact.
func matchShellText(pattern, cmd string) bool {
	if pattern == "*" {
		return true
	}
	if p, ok := strings.CutSuffix(pattern, ":*"); ok {
		return cmd == p || strings.HasPrefix(cmd, p+" ")
	}
	if strings.Contains(pattern, "*") {
		return wildcard(pattern, cmd)
	}
	return cmd == pattern
}

// wildcard matches s against p where `*` matches any run of bytes.
func wildcard(p, s string) bool {
	parts := strings.Split(p, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, part := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(s, part)
		}
		j := strings.Index(s, part)
		if j < 0 {
			return false
		}
		s = s[j+len(part):]
	}
	return true
}

// pathPattern is a compiled path rule: absolute segments, `**` for any
// number of segments.
type pathPattern struct {
	segs []string
	// anyDepth: a pattern with no slash (`*.env`) matches a name at any
	// depth beneath base, as in gitignore.
	anyDepth bool
}

// compilePath resolves a path rule's pattern as Claude Code does:
// `//abs` is absolute, `~/p` is under home, `/p` and `./p` and `p` are
// beneath the node's directory (where the agent runs; Claude Code's
// `/p` is its project root, which is where termsprawl starts the agent).
func compilePath(p, dir, home string) (pathPattern, error) {
	var full string
	anyDepth := false
	switch {
	case strings.HasPrefix(p, "//"):
		full = p[1:]
	case p == "~" || strings.HasPrefix(p, "~/"):
		full = home + p[1:]
	case strings.HasPrefix(p, "/"):
		full = dir + p
	case strings.HasPrefix(p, "./"):
		full = dir + p[1:]
	default:
		anyDepth = !strings.Contains(strings.TrimSuffix(p, "/"), "/")
		full = dir + "/" + p
	}
	dirOnly := strings.HasSuffix(full, "/")
	full = path.Clean(full)
	if dirOnly {
		full += "/**"
	}
	segs := strings.Split(strings.TrimPrefix(full, "/"), "/")
	for _, s := range segs {
		if s == "**" {
			continue
		}
		if _, err := path.Match(s, ""); err != nil {
			return pathPattern{}, fmt.Errorf("the path pattern %q has a bad glob %q: use *, ?, [a-z] and ** (any depth)", p, s)
		}
	}
	return pathPattern{segs: segs, anyDepth: anyDepth}, nil
}

// match reports whether the absolute, cleaned path matches.
func (pp pathPattern) match(abs string) bool {
	segs := strings.Split(strings.TrimPrefix(abs, "/"), "/")
	if matchSegs(pp.segs, segs) {
		return true
	}
	if pp.anyDepth && len(pp.segs) > 0 {
		// base/**/name
		n := len(pp.segs)
		ext := append(append(append([]string{}, pp.segs[:n-1]...), "**"), pp.segs[n-1])
		return matchSegs(ext, segs)
	}
	return false
}

func matchSegs(p, s []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			for i := 0; i <= len(s); i++ {
				if matchSegs(p[1:], s[i:]) {
					return true
				}
			}
			return false
		}
		if len(s) == 0 {
			return false
		}
		if ok, _ := path.Match(p[0], s[0]); !ok {
			return false
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}

// errNoPath: the request names no path a path rule could match.
var errNoPath = errors.New("no path in the input")

// requestPath is the absolute, cleaned path a file tool's input names.
func requestPath(in map[string]any, dir string) (string, error) {
	for _, k := range []string{"file_path", "notebook_path", "path", "absolute_path", "filePath"} {
		if s, ok := in[k].(string); ok && s != "" {
			if !filepath.IsAbs(s) {
				s = filepath.Join(dir, s)
			}
			return filepath.Clean(s), nil
		}
	}
	return "", errNoPath
}

// matchDomain matches WebFetch(domain:HOST) against the input's url.
func matchDomain(pattern string, in map[string]any) bool {
	host, ok := strings.CutPrefix(pattern, "domain:")
	if !ok {
		return false
	}
	raw, _ := in["url"].(string)
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	return strings.EqualFold(u.Hostname(), host)
}
