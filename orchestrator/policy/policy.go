package policy

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Verdict is what a policy says of a request.
type Verdict string

const (
	// Allow: a rule allows it; no human is asked.
	Allow Verdict = "allow"
	// Deny: a rule denies it; the agent is told why.
	Deny Verdict = "deny"
	// Ask: a rule says a human decides, even where another allows it.
	Ask Verdict = "ask"
	// Undecided: no rule decides; a human does, as without policies.
	Undecided Verdict = "undecided"
)

// Scope names where a rule came from: "fleet", "kind:NAME",
// "repository:DIR", "node:NAME" (a named table a node was launched
// with).
type Scope string

// Rules are one scope's lists, as written.
type Rules struct {
	Allow []string `toml:"allow" json:"allow,omitempty"`
	Ask   []string `toml:"ask" json:"ask,omitempty"`
	Deny  []string `toml:"deny" json:"deny,omitempty"`
}

// Check parses every rule and returns the first error, naming the list
// and the rule (for a config file's validation).
func (r Rules) Check() error {
	for _, l := range []struct {
		name  string
		rules []string
	}{{"deny", r.Deny}, {"ask", r.Ask}, {"allow", r.Allow}} {
		for i, s := range l.rules {
			if _, err := ParseRule(s); err != nil {
				return fmt.Errorf("%s[%d]: %w", l.name, i, err)
			}
		}
	}
	return nil
}

// Layer is one scope's parsed rules.
type Layer struct {
	Scope Scope
	allow []Rule
	ask   []Rule
	deny  []Rule
}

// NewLayer parses a scope's rules.
func NewLayer(scope Scope, r Rules) (Layer, error) {
	l := Layer{Scope: scope}
	for _, x := range []struct {
		in  []string
		out *[]Rule
		k   string
	}{{r.Allow, &l.allow, "allow"}, {r.Ask, &l.ask, "ask"}, {r.Deny, &l.deny, "deny"}} {
		for i, s := range x.in {
			rule, err := ParseRule(s)
			if err != nil {
				return Layer{}, fmt.Errorf("%s: %s[%d]: %w", scope, x.k, i, err)
			}
			*x.out = append(*x.out, rule)
		}
	}
	return l, nil
}

// Empty reports whether the layer has no rule.
func (l Layer) Empty() bool { return len(l.allow)+len(l.ask)+len(l.deny) == 0 }

// Request is a permission request: the tool, its input (JSON) and the
// directory of the node that asks (relative paths and redirections are
// judged against it).
type Request struct {
	Tool  string
	Input json.RawMessage
	Dir   string
	Home  string
	// Cwd is where the agent's shell is as it asks (its hook's cwd;
	// "" when unknown: Dir): a relative redirection lands from there, and
	// must still stay beneath Dir.
	Cwd string
}

// Decision is a policy's answer.
type Decision struct {
	Verdict Verdict `json:"verdict"`
	// Rule is the rule that decided (for an allow of a compound command,
	// the rules of each of its commands, joined by " + ").
	Rule string `json:"rule,omitempty"`
	// Scope is where that rule came from.
	Scope Scope `json:"scope,omitempty"`
	// Why says it in words, for the agent, the audit log and a human.
	Why string `json:"why"`
}

// match is one rule that matched, and in which scope.
type match struct {
	rule  Rule
	scope Scope
}

// Decide applies the layers to a request: a deny in any scope wins,
// then an ask, then an allow (for a shell command: every simple command
// allowed, and nothing on the line that no rule may allow); otherwise
// undecided. The order of layers only orders the rules reported.
func Decide(layers []Layer, req Request) Decision {
	var in map[string]any
	_ = json.Unmarshal(req.Input, &in)
	var sh *shellAnalysis
	command := ""
	if ShellTools[req.Tool] {
		command = shellCommand(in)
		a := analyzeShell(command, req.Dir, req.Cwd)
		sh = &a
	}
	// deny, then ask: any rule that matches the request, for a shell
	// command the whole line, any simple command or its unwrapped forms.
	for _, v := range []Verdict{Deny, Ask} {
		for _, l := range layers {
			list := l.deny
			if v == Ask {
				list = l.ask
			}
			for _, r := range list {
				if !r.governs(req.Tool) {
					continue
				}
				if hit, what := matchAny(r, req, in, command, sh); hit {
					return Decision{Verdict: v, Rule: r.Text, Scope: l.Scope, Why: fmt.Sprintf("%s rule %s (%s) matches %s", v, r.Text, l.Scope, what)}
				}
			}
		}
	}
	if sh == nil {
		for _, l := range layers {
			for _, r := range l.allow {
				if r.governs(req.Tool) && matchOne(r, req, in) {
					return Decision{Verdict: Allow, Rule: r.Text, Scope: l.Scope, Why: fmt.Sprintf("allow rule %s (%s)", r.Text, l.Scope)}
				}
			}
		}
		return Decision{Verdict: Undecided, Why: fmt.Sprintf("no rule decides %s: a human does", req.Tool)}
	}
	if len(sh.never) > 0 {
		return Decision{Verdict: Undecided, Why: "no rule may allow this command: " + strings.Join(sh.never, "; ") + ": a human decides"}
	}
	if len(sh.cmds) == 0 {
		return Decision{Verdict: Undecided, Why: "the command has no simple command to match: a human decides"}
	}
	var used []match
	for _, c := range sh.cmds {
		m, ok := allowFor(layers, req.Tool, c)
		if !ok {
			return Decision{Verdict: Undecided, Why: fmt.Sprintf("no allow rule matches %q (every command of a line must be allowed): a human decides", c.text)}
		}
		used = append(used, m)
	}
	var rules, scopes []string
	seen := map[string]bool{}
	for _, m := range used {
		if !seen[m.rule.Text+"\x00"+string(m.scope)] {
			seen[m.rule.Text+"\x00"+string(m.scope)] = true
			rules = append(rules, m.rule.Text)
			if !contains(scopes, string(m.scope)) {
				scopes = append(scopes, string(m.scope))
			}
		}
	}
	why := fmt.Sprintf("allow rule %s (%s)", rules[0], scopes[0])
	if len(sh.cmds) > 1 {
		why = fmt.Sprintf("each of its %d commands is allowed: %s (%s)", len(sh.cmds), strings.Join(rules, " + "), strings.Join(scopes, ", "))
	}
	return Decision{Verdict: Allow, Rule: strings.Join(rules, " + "), Scope: Scope(strings.Join(scopes, ",")), Why: why}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// allowFor finds the allow rule for one simple command: its text or
// source form, never an unwrapped one.
func allowFor(layers []Layer, tool string, c simpleCmd) (match, bool) {
	for _, l := range layers {
		for _, r := range l.allow {
			if !r.governs(tool) {
				continue
			}
			if !r.hasArgs || matchShellText(r.Pattern, c.text) || matchShellText(r.Pattern, c.source) {
				return match{r, l.Scope}, true
			}
		}
	}
	return match{}, false
}

// matchAny is a deny or ask rule's match, and what matched.
func matchAny(r Rule, req Request, in map[string]any, command string, sh *shellAnalysis) (bool, string) {
	if sh == nil {
		return matchOne(r, req, in), req.Tool
	}
	if !r.hasArgs {
		return true, "every " + req.Tool + " command"
	}
	if matchShellText(r.Pattern, strings.TrimSpace(command)) {
		return true, fmt.Sprintf("the command %q", command)
	}
	for _, c := range sh.cmds {
		for _, form := range append([]string{c.text, c.source}, c.inner...) {
			if matchShellText(r.Pattern, form) {
				return true, fmt.Sprintf("%q in the command", form)
			}
		}
	}
	return false, ""
}

// matchOne matches a rule against a request that is not a shell command.
func matchOne(r Rule, req Request, in map[string]any) bool {
	if !r.hasArgs || r.Pattern == "*" {
		return true
	}
	switch {
	case r.Tool == "Edit" || r.Tool == "Read" || r.Tool == "Write":
		p, err := requestPath(in, req.Dir)
		if err != nil {
			return false
		}
		pp, err := compilePath(r.Pattern, req.Dir, req.Home)
		if err != nil {
			return false
		}
		return pp.match(p)
	case r.Tool == "WebFetch":
		return matchDomain(r.Pattern, in)
	}
	// Any other tool: the pattern against the input's main string.
	for _, k := range []string{"command", "file_path", "path", "url", "pattern", "query", "prompt", "subagent_type", "skill"} {
		if s, ok := in[k].(string); ok {
			return matchShellText(r.Pattern, s)
		}
	}
	return false
}

// shellCommand is the command of a shell tool's input: `command` as a
// string, or an argv list (Codex) joined for the shell.
func shellCommand(in map[string]any) string {
	switch c := in["command"].(type) {
	case string:
		return c
	case []any:
		var words []string
		for _, w := range c {
			s, _ := w.(string)
			words = append(words, s)
		}
		// ["bash","-lc","CMD"] is CMD.
		if len(words) == 3 && (words[0] == "bash" || words[0] == "sh" || words[0] == "zsh") && (words[1] == "-lc" || words[1] == "-c") {
			return words[2]
		}
		for i, w := range words {
			words[i] = shellQuote(w)
		}
		return strings.Join(words, " ")
	}
	if s, ok := in["cmd"].(string); ok {
		return s
	}
	return ""
}

func shellQuote(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>()*?[]{}~#!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// RequestFromRule turns `Tool(arg)` into a request, for `termsprawl
// policy test 'Bash(git status)'`: the argument is the command for a
// shell tool, the file path for a file tool, the url for WebFetch.
func RequestFromRule(s, dir, home string) (Request, error) {
	r, err := ParseRule(s)
	if err != nil {
		return Request{}, err
	}
	in := map[string]any{}
	if r.hasArgs {
		switch {
		case ShellTools[r.Tool]:
			in["command"] = r.Pattern
		case editTools[r.Tool] || readTools[r.Tool]:
			in["file_path"] = r.Pattern
		case r.Tool == "WebFetch":
			in["url"] = r.Pattern
		default:
			in["input"] = r.Pattern
		}
	}
	b, _ := json.Marshal(in)
	return Request{Tool: r.Tool, Input: b, Dir: dir, Home: home}, nil
}
