// Package launchenv is what a node's program starts with, decided before
// anything exists: its environment (the -e list of a local or a remote
// node, the minimal environment of env_mode "replace", the environment of
// the tmux commands that start the private servers), the checks of a
// launch's env names, the user's login shell, and whether the program is
// an executable file on the node's PATH. It knows nothing of nodes or
// tmux.
package launchenv

import (
	"maps"
	"os"
	"os/user"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

func usage(format string, a ...any) error { return tools.Errorf(tools.KindUsage, format, a...) }

// MinimalNames is the environment a node gets in env_mode "replace"
// (plus TERMSPRAWL_* and the launch's own env).
var MinimalNames = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR"}

// Minimal is this process's values of MinimalNames.
func Minimal() []string {
	var env []string
	for _, k := range MinimalNames {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Tmux is the environment of the tmux commands that start and probe the
// private servers: Minimal and TMUX_TMPDIR, so a server is made where its
// control clients (tmuxctl) and the engine's socket dir look for it.
func Tmux() []string {
	env := Minimal()
	if v, ok := os.LookupEnv("TMUX_TMPDIR"); ok {
		env = append(env, "TMUX_TMPDIR="+v)
	}
	return env
}

// DefaultShell is the user's login shell (/etc/passwd), else $SHELL,
// else /bin/sh.
func DefaultShell() string {
	if u, err := user.Current(); err == nil {
		if b, err := os.ReadFile("/etc/passwd"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				f := strings.Split(line, ":")
				if len(f) >= 7 && f[0] == u.Username && f[6] != "" {
					return f[6]
				}
			}
		}
	}
	if s := os.Getenv("SHELL"); s != "" {
		return s
	}
	return "/bin/sh"
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Check refuses a launch's bad env_mode or env names.
func Check(mode string, env map[string]string) error {
	switch mode {
	case "", "replace", "inherit":
	default:
		return usage("env_mode %q: use replace or inherit", mode)
	}
	for k := range env {
		if !nameRE.MatchString(k) {
			return usage("env name %q is not a valid variable name", k)
		}
	}
	return nil
}

// Executable reports why the file at p cannot be run as prog, or nil.
func Executable(prog, p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return tools.Errorf(tools.KindUsage, "program %q: %w: check the path, or install it", prog, err).WithDetails("program", prog)
	case !fi.Mode().IsRegular():
		return tools.Errorf(tools.KindUsage, "program %q (%s) is not a regular file", prog, p).WithDetails("program", prog)
	case fi.Mode().Perm()&0o111 == 0:
		return tools.Errorf(tools.KindUsage, "program %q (%s) is not executable: chmod +x it", prog, p).WithDetails("program", prog)
	}
	return nil
}

// CheckProgram refuses a program that cannot start in cwd with the
// node's environment env: not on its PATH, not a regular executable file.
func CheckProgram(prog, cwd string, env []string) error {
	if strings.Contains(prog, "/") {
		p := prog
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		return Executable(prog, p)
	}
	pathList := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathList = v
		}
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(cwd, dir)
		}
		if Executable(prog, filepath.Join(dir, prog)) == nil {
			return nil
		}
	}
	return tools.Errorf(tools.KindUsage, "program %q is not on the node's PATH (%s): install it, or give its absolute path as command[0]", prog, pathList).
		WithDetails("program", prog)
}

// SortedKeys are m's keys in order.
func SortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

// Local is what a local node's -e list is made of.
type Local struct {
	Mode     string            // env_mode: "inherit", else replace
	Env      map[string]string // the launch's env
	Extra    map[string]string // the engine's own (agents' variables), last
	CtlPath  string            // termsprawlctl, put first on PATH ("": none)
	StateDir string
	ID       string
	Socket   string // the node's tmux server
	Sandbox  string // the profile's name; "" or "none": not sandboxed
}

// List builds the -e list: the minimal or inherited environment, the
// launch's env, then TERMSPRAWL_*.
func (l Local) List() []string {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	if l.Mode == "inherit" {
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			if k == "TMUX" || k == "TMUX_PANE" || k == "TERM" || strings.HasPrefix(k, "TERMSPRAWL_") || !nameRE.MatchString(k) {
				continue
			}
			set(k, v)
		}
	} else {
		for _, kv := range Minimal() {
			k, v, _ := strings.Cut(kv, "=")
			if k == "TERM" {
				continue // tmux sets TERM to its default-terminal
			}
			set(k, v)
		}
	}
	for _, k := range SortedKeys(l.Env) {
		set(k, l.Env[k])
	}
	if l.CtlPath != "" {
		// termsprawlctl on PATH in every node, first (CONTRACT §10).
		dir := filepath.Dir(l.CtlPath)
		if p := vars["PATH"]; p != "" {
			set("PATH", dir+string(filepath.ListSeparator)+p)
		} else {
			set("PATH", dir)
		}
	}
	set("TERMSPRAWL_SESSION_FILE", tools.SessionPath(l.StateDir, l.ID))
	set("TERMSPRAWL_NODE", l.ID)
	set("TERMSPRAWL_HOME", l.StateDir)
	set("TERMSPRAWL_TMUX_SOCKET", l.Socket)
	if l.Sandbox != "" && l.Sandbox != "none" {
		set("TERMSPRAWL_SANDBOX", l.Sandbox)
	}
	if l.CtlPath != "" {
		set("TERMSPRAWL_CTL", l.CtlPath)
	}
	for k, v := range l.Extra {
		set(k, v)
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out
}

// Remote is what a remote node's -e list is made of: paths are the
// host's.
type Remote struct {
	Env, Extra  map[string]string
	Ctl         string // the host's termsprawlctl ("": none found)
	Path        string // the host's PATH, from its probe
	ID          string
	SessionFile string
	Home        string // the remote dir
	Socket      string // the host's tmux server
	Host        string
	Sandbox     string // as Local.Sandbox
}

// List is the -e list of a remote node: the launch's env, then
// TERMSPRAWL_* with paths on the host. The remote tmux server's own
// environment (the ssh login's) is the base in both env modes.
func (r Remote) List() []string {
	var out []string
	for _, k := range SortedKeys(r.Env) {
		out = append(out, k+"="+r.Env[k])
	}
	if r.Ctl != "" {
		out = append(out, "PATH="+path.Dir(r.Ctl)+":"+r.Path, "TERMSPRAWL_CTL="+r.Ctl)
	}
	out = append(out, "TERMSPRAWL_SESSION_FILE="+r.SessionFile, "TERMSPRAWL_NODE="+r.ID,
		"TERMSPRAWL_HOME="+r.Home, "TERMSPRAWL_TMUX_SOCKET="+r.Socket, "TERMSPRAWL_HOST="+r.Host)
	if r.Sandbox != "" && r.Sandbox != "none" {
		out = append(out, "TERMSPRAWL_SANDBOX="+r.Sandbox)
	}
	for _, k := range SortedKeys(r.Extra) {
		out = append(out, k+"="+r.Extra[k])
	}
	return out
}
