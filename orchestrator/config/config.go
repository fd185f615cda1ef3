// Package config reads <state>/config.toml (CONTRACT §28): the sandbox
// defaults (§27), the keys of the human's attached clients (§26),
// notifications (§20), permission policies and budgets (§28), and the
// screen rules of custom agents (§29).
//
// A file is checked whole before it counts: unknown keys, wrong types and
// bad values are refused with the file's line and the fix. The rooms that
// own a value's deeper meaning (a policy rule's syntax, a key name) add
// their checks with Check functions, so a bad rule is refused at `up` and
// at reload as well as a bad number. A Store keeps the settings in force
// and reloads them on change; a bad reload leaves the old ones in force.
//
// It knows nothing of nodes.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// FileName is the configuration file in the state directory.
const FileName = "config.toml"

// MaxFileSize bounds what is read of config.toml.
const MaxFileSize = 1 << 20

// Sandbox profiles (CONTRACT §27).
const (
	SandboxWorkspace = "workspace"
	SandboxGuard     = "guard"
	SandboxNone      = "none"
)

// Budget periods and actions (CONTRACT §28).
const (
	PeriodDay  = "day"
	PeriodLife = "life"

	ActionNotify = "notify"
	ActionPause  = "pause"
	ActionStop   = "stop"
)

// Agent states a screen rule may give (CONTRACT §29).
const (
	StateWaiting = "waiting"
	StateIdle    = "idle"
	StateWorking = "working"
)

// Config is the whole file, with defaults filled in where it is silent.
// A *Config handed out by a Store is never changed afterwards: treat it
// as read-only.
type Config struct {
	Sandbox    Sandbox     `toml:"sandbox"`
	Keys       Keys        `toml:"keys"`
	Notify     Notify      `toml:"notify"`
	Worktree   Worktree    `toml:"worktree"`
	Policy     Policy      `toml:"policy"`
	Budgets    []Budget    `toml:"budget"`
	AgentRules []AgentRule `toml:"agent_rule"`

	// Path is the file the settings came from ("" when there was none).
	Path string `toml:"-"`
	// sources maps a dotted key ("sandbox.default", "budget[0].scope") to
	// the line that set it.
	sources map[string]int
}

// Sandbox is [sandbox].
type Sandbox struct {
	// Default is the profile of agent nodes: workspace, guard or none.
	Default string `toml:"default"`
	// SharedCaches are cache directories shared with the human instead of
	// kept private per node (absolute, or starting with ~/).
	SharedCaches []string `toml:"shared_caches"`
	// Hide are more paths hidden in the workspace profile.
	Hide []string `toml:"hide"`
}

// Keys is [keys]: the root-table keys of the humans' attached clients,
// in tmux's key names ("" leaves the built-in default).
type Keys struct {
	Detach string `toml:"detach"`
	Answer string `toml:"answer"`
}

// Notify is [notify]; notify.json may still give the same.
type Notify struct {
	Targets []string `toml:"targets"`
	Mode    string   `toml:"mode"`
}

// Worktree is [worktree]: the bounds of .worktreeinclude copies.
type Worktree struct {
	CopyMaxFile  Size `toml:"copy_max_file"`
	CopyMaxTotal Size `toml:"copy_max_total"`
}

// Rules are the allow, ask and deny lists of one scope, in Claude Code's
// rule syntax (`Bash(git status)`).
type Rules struct {
	Allow []string `toml:"allow"`
	Ask   []string `toml:"ask"`
	Deny  []string `toml:"deny"`
}

// Empty reports whether no list has a rule.
func (r Rules) Empty() bool { return len(r.Allow)+len(r.Ask)+len(r.Deny) == 0 }

// Policy is [policy]: the fleet's rules, [policy.kind.KIND] and
// [policy.named.NAME] tables.
type Policy struct {
	Rules
	Kind  map[string]Rules `toml:"kind"`
	Named map[string]Rules `toml:"named"`
}

// Budget is one [[budget]].
type Budget struct {
	// Scope is "fleet", "kind:NAME" or "node:ID".
	Scope string `toml:"scope"`
	// Period is day or life.
	Period string `toml:"period"`
	// CostUSD, Tokens and Work are the limits; nil or 0 is no limit of
	// that measure, and at least one is set.
	CostUSD *float64  `toml:"cost_usd"`
	Tokens  *int64    `toml:"tokens"`
	Work    *Duration `toml:"work"`
	// Action is notify, pause or stop.
	Action string `toml:"action"`
}

// ScopeKind splits Scope: ("fleet", ""), ("kind", NAME) or ("node", ID).
func (b Budget) ScopeKind() (kind, name string) {
	if k, n, ok := strings.Cut(b.Scope, ":"); ok {
		return k, n
	}
	return b.Scope, ""
}

// AgentRule is one [[agent_rule]]: a screen rule for an agent's state.
type AgentRule struct {
	Kind    string `toml:"kind"`
	State   string `toml:"state"`
	Pattern string `toml:"pattern"`

	re *regexp.Regexp
}

// Regexp is the compiled Pattern (checked when the file was read).
func (r AgentRule) Regexp() *regexp.Regexp { return r.re }

// Size is a byte count written as an integer or a string with a unit
// ("64MiB", "1GiB", "500KB").
type Size int64

// UnmarshalTOML implements toml.Unmarshaler.
func (s *Size) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case int64:
		if v < 0 {
			return fmt.Errorf("a size is not negative (%d)", v)
		}
		*s = Size(v)
		return nil
	case string:
		n, err := ParseSize(v)
		if err != nil {
			return err
		}
		*s = n
		return nil
	}
	return fmt.Errorf("a size is a number of bytes or a string such as \"64MiB\", not %T", v)
}

// ParseSize reads "64MiB", "1GiB", "500KB", "4096".
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	num, unit := strings.TrimSpace(t[:i]), strings.TrimSpace(t[i:])
	mult := map[string]float64{
		"": 1, "B": 1,
		"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	}[unit]
	f, err := strconv.ParseFloat(num, 64)
	if mult == 0 || err != nil || f < 0 || math.IsInf(f*mult, 0) || f*mult > math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size: write a number of bytes with a unit, such as \"64MiB\" or \"1GiB\"", s)
	}
	return Size(f * mult), nil
}

// Duration is a time span written as a string ("2h", "30m").
type Duration time.Duration

// UnmarshalTOML implements toml.Unmarshaler.
func (d *Duration) UnmarshalTOML(v any) error {
	s, ok := v.(string)
	if !ok {
		return fmt.Errorf("a duration is a string such as \"2h\" or \"30m\", not %T", v)
	}
	p, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration: write it as \"2h\", \"90m\" or \"1h30m\"", s)
	}
	*d = Duration(p)
	return nil
}

// Defaults of what the file may leave out.
const (
	DefaultCopyMaxFile  Size = 64 << 20
	DefaultCopyMaxTotal Size = 256 << 20
)

// Default is the configuration of a state directory without config.toml.
func Default() *Config {
	c := &Config{}
	c.fill()
	return c
}

func (c *Config) fill() {
	if c.Sandbox.Default == "" {
		c.Sandbox.Default = SandboxWorkspace
	}
	if c.Worktree.CopyMaxFile == 0 {
		c.Worktree.CopyMaxFile = DefaultCopyMaxFile
	}
	if c.Worktree.CopyMaxTotal == 0 {
		c.Worktree.CopyMaxTotal = DefaultCopyMaxTotal
	}
	for i := range c.Budgets {
		if c.Budgets[i].Period == "" {
			c.Budgets[i].Period = PeriodDay
		}
		if c.Budgets[i].Action == "" {
			c.Budgets[i].Action = ActionNotify
		}
	}
}

// Error is a refused file: where and what, and the fix.
type Error struct {
	Path string // the file
	Line int    // 1-based; 0 when the whole file is meant
	Key  string // the dotted key, when one is meant
	Msg  string
	Fix  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Path)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Fix != "" {
		b.WriteString("; ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

// Errors is every problem of one file, in the file's order.
type Errors []*Error

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Check is a room's own check of the values it owns. It returns one
// error per bad value, made with Config.Errorf so that each names its
// line.
type Check func(c *Config) []*Error

// Errorf makes an error about a key (dotted, as Sources names it:
// "policy.allow", "budget[1].cost_usd", "policy.kind.codex.deny").
func (c *Config) Errorf(key, fix, format string, args ...any) *Error {
	return &Error{Path: c.Path, Line: c.Line(key), Key: key, Msg: fmt.Sprintf(format, args...), Fix: fix}
}

// Line is the line that set a dotted key, or 0.
func (c *Config) Line(key string) int { return c.sources[key] }

// Source says where a dotted key's value came from: "config.toml:12"
// or "default".
func (c *Config) Source(key string) string {
	if l, ok := c.sources[key]; ok {
		return fmt.Sprintf("%s:%d", FileName, l)
	}
	return "default"
}

// Load reads <stateDir>/config.toml; a missing file is the defaults.
func Load(stateDir string, checks ...Check) (*Config, error) {
	path := filepath.Join(stateDir, FileName)
	b, err := readBounded(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Default(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return Parse(path, b, checks...)
}

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s is %d bytes; config.toml is at most %d", path, st.Size(), MaxFileSize)
	}
	b := make([]byte, st.Size()+1)
	n, err := f.Read(b)
	if err != nil && n == 0 && st.Size() > 0 {
		return nil, err
	}
	if n > MaxFileSize {
		return nil, fmt.Errorf("%s grew past %d bytes while read", path, MaxFileSize)
	}
	return b[:n], nil
}

// Parse checks and decodes a file's bytes; path names it in errors.
func Parse(path string, data []byte, checks ...Check) (*Config, error) {
	c := &Config{Path: path}
	md, err := toml.Decode(string(data), c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{Path: path, Line: pe.Position.Line, Key: pe.LastKey, Msg: pe.Message,
				Fix: "correct the TOML at that line (see `termsprawl config` for the accepted keys)"}
		}
		if e := typeError(path, err); e != nil {
			return nil, e
		}
		return nil, &Error{Path: path, Msg: err.Error(), Fix: "correct the value's type (see `termsprawl config` for the accepted keys)"}
	}
	c.sources = locate(data)
	var errs Errors
	for _, k := range md.Undecoded() {
		key := dotted(k)
		errs = append(errs, &Error{Path: path, Line: c.sources[key], Key: key, Msg: "unknown key",
			Fix: "remove it or correct its name; the keys are listed by `termsprawl config`"})
	}
	errs = append(errs, c.validate()...)
	for _, ch := range checks {
		errs = append(errs, ch(c)...)
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *Error) int { return a.Line - b.Line })
		return nil, errs
	}
	c.fill()
	return c, nil
}

// tomlTypeErr is the TOML library's error for a value of the wrong type,
// which it gives as text only.
var tomlTypeErr = regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]*)"\): incompatible types: TOML value has type (\S+); destination has type (\S+)$`)

// typeError is a wrong type's error with its line, key and fix in the
// words of the file, or nil when err is not one.
func typeError(path string, err error) *Error {
	m := tomlTypeErr.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	line, _ := strconv.Atoi(m[1])
	words := func(t string) string {
		switch {
		case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
			return "a whole number"
		case strings.HasPrefix(t, "float"):
			return "a number"
		case t == "string":
			return "a quoted string"
		case t == "bool":
			return "true or false"
		case t == "slice", strings.HasPrefix(t, "[]"):
			return "a list ([…])"
		case strings.HasPrefix(t, "map"), t == "struct":
			return "a table"
		}
		return t
	}
	return &Error{Path: path, Line: line, Key: m[2], Msg: fmt.Sprintf("%s where %s belongs", words(m[3]), words(m[4])),
		Fix: fmt.Sprintf("write %s (see `termsprawl config` for the accepted keys)", words(m[4]))}
}

func (c *Config) validate() []*Error {
	var errs []*Error
	bad := func(key, fix, format string, args ...any) {
		errs = append(errs, c.Errorf(key, fix, format, args...))
	}
	switch c.Sandbox.Default {
	case "", SandboxWorkspace, SandboxGuard, SandboxNone:
	default:
		bad("sandbox.default", `use "workspace", "guard" or "none"`, "unknown sandbox profile %q", c.Sandbox.Default)
	}
	for _, list := range []struct {
		key   string
		paths []string
	}{{"sandbox.shared_caches", c.Sandbox.SharedCaches}, {"sandbox.hide", c.Sandbox.Hide}} {
		for _, p := range list.paths {
			if !filepath.IsAbs(p) && !strings.HasPrefix(p, "~/") {
				bad(list.key, `write an absolute path or one starting with "~/"`, "%q is not an absolute path", p)
			} else if strings.Contains("/"+p+"/", "/../") {
				bad(list.key, "write the path without ..", "%q has a .. in it", p)
			}
		}
	}
	for _, k := range []struct{ key, val string }{{"keys.detach", c.Keys.Detach}, {"keys.answer", c.Keys.Answer}} {
		if k.val != "" && !validKeyName(k.val) {
			bad(k.key, `write one tmux key name, such as "F12", "M-F12" or "C-\\"`, "%q is not a key name", k.val)
		}
	}
	if c.Keys.Detach != "" && c.Keys.Detach == c.Keys.Answer {
		bad("keys.answer", "give detach and answer different keys", "the same key %q as keys.detach", c.Keys.Answer)
	}
	switch c.Notify.Mode {
	case "", "quiet", "normal", "all":
	default:
		bad("notify.mode", `use "quiet", "normal" or "all"`, "unknown notification mode %q", c.Notify.Mode)
	}
	if c.Worktree.CopyMaxTotal != 0 && c.Worktree.CopyMaxFile > c.Worktree.CopyMaxTotal {
		bad("worktree.copy_max_file", "make copy_max_file at most copy_max_total", "larger than worktree.copy_max_total")
	}
	for i, b := range c.Budgets {
		key := func(k string) string { return fmt.Sprintf("budget[%d].%s", i, k) }
		kind, name := b.ScopeKind()
		switch {
		case b.Scope == "fleet":
		case (kind == "kind" || kind == "node") && name != "":
		default:
			bad(key("scope"), `use "fleet", "kind:NAME" or "node:ID"`, "unknown budget scope %q", b.Scope)
		}
		switch b.Period {
		case "", PeriodDay, PeriodLife:
		default:
			bad(key("period"), `use "day" or "life"`, "unknown budget period %q", b.Period)
		}
		switch b.Action {
		case "", ActionNotify, ActionPause, ActionStop:
		default:
			bad(key("action"), `use "notify", "pause" or "stop"`, "unknown budget action %q", b.Action)
		}
		if b.CostUSD == nil && b.Tokens == nil && b.Work == nil {
			bad(fmt.Sprintf("budget[%d]", i), "give cost_usd, tokens or work", "a budget without a limit")
		}
		if b.CostUSD != nil && (!(*b.CostUSD > 0) || math.IsInf(*b.CostUSD, 0)) {
			bad(key("cost_usd"), "give a positive number of dollars, such as 20.0", "%v is not a budget", *b.CostUSD)
		}
		if b.Tokens != nil && *b.Tokens <= 0 {
			bad(key("tokens"), "give a positive number of tokens", "%d is not a budget", *b.Tokens)
		}
		if b.Work != nil && *b.Work <= 0 {
			bad(key("work"), `give a positive duration, such as "2h"`, "%s is not a budget", time.Duration(*b.Work))
		}
	}
	for i := range c.AgentRules {
		r := &c.AgentRules[i]
		key := func(k string) string { return fmt.Sprintf("agent_rule[%d].%s", i, k) }
		if r.Kind == "" {
			bad(key("kind"), `give the agent kind, such as "custom"`, "a rule without a kind")
		}
		switch r.State {
		case StateWaiting, StateIdle, StateWorking:
		default:
			bad(key("state"), `use "waiting", "idle" or "working"`, "unknown state %q", r.State)
		}
		if r.Pattern == "" {
			bad(key("pattern"), "give a Go regular expression", "a rule without a pattern")
			continue
		}
		re, err := regexp.Compile(r.Pattern)
		if err != nil {
			bad(key("pattern"), "correct the Go regular expression (https://pkg.go.dev/regexp/syntax)", "%v", err)
			continue
		}
		r.re = re
	}
	return errs
}

// validKeyName accepts one tmux key name: modifiers (C-, M-, S-) then a
// key (a printable character, or a named key such as F12, Space, Tab).
func validKeyName(s string) bool {
	rest := s
	for len(rest) > 2 && (rest[1] == '-') && strings.ContainsRune("CMS", rune(rest[0])) {
		rest = rest[2:]
	}
	if rest == "" {
		return false
	}
	if len([]rune(rest)) == 1 {
		r := []rune(rest)[0]
		return r > ' ' && r != 0x7f
	}
	return tmuxKeyNames[strings.ToLower(rest)]
}

// tmuxKeyNames are the named keys tmux binds (its key-string.c table,
// which it looks up ignoring case), lower-cased; F13 and up are not keys
// to tmux.
var tmuxKeyNames = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range strings.Fields(`IC Insert DC Delete Home End NPage PageDown PgDn PPage PageUp PgUp
		Tab BTab Space BSpace Enter Escape Up Down Left Right
		KP/ KP* KP- KP7 KP8 KP9 KP+ KP4 KP5 KP6 KP1 KP2 KP3 KPEnter KP0 KP.`) {
		m[strings.ToLower(k)] = true
	}
	for i := 1; i <= 12; i++ {
		m[fmt.Sprintf("f%d", i)] = true
	}
	return m
}()

func dotted(k toml.Key) string { return strings.Join(k, ".") }
