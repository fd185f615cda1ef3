package policy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// MaxCommand bounds the shell command a policy parses; a longer one is
// never allowed by a rule (deny and ask rules still see its text).
const MaxCommand = 64 << 10

// simpleCmd is one simple command of a shell command line, in the forms
// rules are matched against.
type simpleCmd struct {
	// text is the words' values joined by single spaces (quotes
	// removed where a word is static, the source form where not).
	text string
	// source is the command as the shell printer writes it.
	source string
	// inner are the forms a deny or ask rule also looks at: the command
	// with wrappers taken off (`exec`, `command`, `env`, `nohup`, `sudo`,
	// `xargs`, `timeout N`, …) and its program by base name (`/bin/rm` →
	// `rm`). An allow rule never matches these.
	inner []string
}

// shellAnalysis is what a command line is made of.
type shellAnalysis struct {
	cmds []simpleCmd
	// never lists why no rule may allow the command line (substitutions,
	// eval, redirections outside the directory, a parse error).
	never []string
}

// analyzeShell parses a command line with bash's grammar. dir is the
// node's directory (redirections must stay beneath it); cwd, where the
// shell runs ("" or a relative path: dir), is where relative ones start.
func analyzeShell(command, dir, cwd string) shellAnalysis {
	if cwd == "" || !filepath.IsAbs(cwd) {
		cwd = dir
	}
	var a shellAnalysis
	if len(command) > MaxCommand {
		a.never = append(a.never, fmt.Sprintf("the command is over %d KiB", MaxCommand>>10))
		return a
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		a.never = append(a.never, fmt.Sprintf("it is not a command line bash can parse (%v)", err))
		return a
	}
	seen := map[string]bool{}
	never := func(why string) {
		if !seen[why] {
			seen[why] = true
			a.never = append(a.never, why)
		}
	}
	// A cd (pushd, popd) moves where a relative redirection lands: with
	// one on the line, a relative target cannot be placed.
	changesDir, relative := false, false
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			never("it has a command substitution ($(…) or `…`)")
		case *syntax.ProcSubst:
			never("it has a process substitution (<(…) or >(…))")
		case *syntax.CoprocClause:
			never("it starts a coprocess")
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			// Bash evaluates array subscripts in arithmetic, which can
			// run commands through a variable's value.
			never("it has arithmetic (bash may run commands from array subscripts in it)")
		case *syntax.Redirect:
			if why := redirectOutside(n, dir, cwd); why != "" {
				never(why)
			} else if t, ok := fileTarget(n); ok && !filepath.IsAbs(t) {
				relative = true
			}
		case *syntax.CallExpr:
			c := newSimpleCmd(n.Assigns, n.Args)
			for _, form := range append([]string{c.text}, c.inner...) {
				name, _, _ := strings.Cut(form, " ")
				switch name {
				case "eval", "source", ".", "trap":
					never("it runs " + name + " (the code it runs is not on the line to check)")
				case "cd", "pushd", "popd":
					changesDir = true
				}
			}
			a.cmds = append(a.cmds, c)
		case *syntax.DeclClause:
			var src bytes.Buffer
			_ = syntax.NewPrinter(syntax.SingleLine(true)).Print(&src, n)
			s := strings.TrimSpace(src.String())
			a.cmds = append(a.cmds, simpleCmd{text: s, source: s})
		}
		return true
	})
	if changesDir && relative {
		never("it changes directory (cd) and redirects to a relative path, which may then be outside the node's directory")
	}
	return a
}

// fileTarget is a redirection's file, when it names one statically (not
// a here-document, a descriptor duplication or a /dev/ stream).
func fileTarget(r *syntax.Redirect) (string, bool) {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return "", false
	}
	if r.Word == nil {
		return "", false
	}
	t, ok := staticValue(r.Word)
	if !ok || ((r.Op == syntax.DplIn || r.Op == syntax.DplOut) && (t == "-" || isDigits(t))) {
		return "", false
	}
	return t, true
}

// newSimpleCmd builds a simple command's forms.
func newSimpleCmd(assigns []*syntax.Assign, args []*syntax.Word) simpleCmd {
	var words, src []string
	p := syntax.NewPrinter(syntax.SingleLine(true))
	for _, as := range assigns {
		var b bytes.Buffer
		_ = p.Print(&b, as)
		words = append(words, b.String())
		src = append(src, b.String())
	}
	var values []string
	for _, w := range args {
		var b bytes.Buffer
		_ = p.Print(&b, w)
		src = append(src, b.String())
		v, ok := staticValue(w)
		if !ok {
			v = b.String()
		}
		values = append(values, v)
		words = append(words, v)
	}
	c := simpleCmd{text: strings.Join(words, " "), source: strings.Join(src, " ")}
	c.inner = unwrap(values)
	return c
}

// wrappers run the command that follows them (after their own options).
var wrappers = map[string]bool{
	"exec": true, "command": true, "builtin": true, "env": true, "nohup": true, "time": true, "nice": true,
	"sudo": true, "doas": true, "xargs": true, "timeout": true, "stdbuf": true, "setsid": true, "ionice": true,
	"chroot": true, "unbuffer": true, "strace": true, "watch": true, "flock": true, "busybox": true,
}

// unwrap returns the command's forms without wrappers and with its
// program by base name, for deny and ask rules.
func unwrap(words []string) []string {
	var out []string
	for len(words) > 0 {
		base := filepath.Base(words[0])
		if base != words[0] {
			out = append(out, strings.Join(append([]string{base}, words[1:]...), " "))
		}
		if !wrappers[base] {
			break
		}
		words = words[1:]
		// Skip the wrapper's options, VAR=value (env) and a duration
		// (timeout 10).
		for len(words) > 0 && (strings.HasPrefix(words[0], "-") || strings.Contains(words[0], "=") || isNumberish(words[0])) {
			words = words[1:]
		}
		if len(words) > 0 {
			out = append(out, strings.Join(words, " "))
		}
	}
	// sh -c 'CMD' / bash -c 'CMD': the inner line's commands too.
	if len(words) >= 3 {
		switch filepath.Base(words[0]) {
		case "sh", "bash", "dash", "zsh", "ksh", "mksh":
			for i := 1; i+1 < len(words); i++ {
				if strings.HasPrefix(words[i], "-") && strings.Contains(words[i], "c") {
					for _, c := range analyzeShell(words[i+1], "/", "").cmds {
						out = append(out, c.text)
						out = append(out, c.inner...)
					}
					break
				}
			}
		}
	}
	return out
}

func isNumberish(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789.smhd", r) {
			return false
		}
	}
	return s[0] >= '0' && s[0] <= '9'
}

// staticValue is the value a word has without any expansion: literals
// with backslashes taken, single quotes, double quotes of literals.
func staticValue(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			v := p.Value
			if i == 0 && (v == "~" || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "~")) {
				return "", false // tilde expansion
			}
			if strings.ContainsAny(v, "*?[") {
				return "", false // a glob
			}
			b.WriteString(unescape(v))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescapeDouble(l.Value))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// redirectOutside says why a redirection leaves dir ("" when it stays
// beneath it, duplicates a descriptor or is a here-document).
func redirectOutside(r *syntax.Redirect, dir, cwd string) string {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return ""
	}
	if r.Word == nil {
		return ""
	}
	target, ok := staticValue(r.Word)
	if !ok {
		return "it redirects to a path termsprawl cannot know before it runs (an expansion)"
	}
	if r.Op == syntax.DplIn || r.Op == syntax.DplOut {
		if target == "-" || isDigits(target) {
			return ""
		}
	}
	switch target {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin":
		return ""
	}
	if dir == "" {
		return fmt.Sprintf("it redirects to %q and the node has no directory", target)
	}
	abs := target
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(cwd, abs)
	}
	abs = filepath.Clean(abs)
	if !beneath(abs, filepath.Clean(dir)) {
		return fmt.Sprintf("it redirects to %q, outside the node's directory %s", target, dir)
	}
	if !realBeneath(abs, filepath.Clean(dir)) {
		return fmt.Sprintf("it redirects to %q, which a symbolic link takes outside the node's directory %s", target, dir)
	}
	return ""
}

// realBeneath reports whether p, with the symbolic links of its existing
// part followed, is still beneath dir (with its own links followed). A
// link that leads nowhere (a write through it would make its target)
// is not beneath anything.
func realBeneath(p, dir string) bool {
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		rd = dir
	}
	var rest []string
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return beneath(filepath.Join(append([]string{r}, rest...)...), rd)
		}
		if st, err := os.Lstat(p); err == nil && st.Mode()&os.ModeSymlink != 0 {
			return false
		}
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// beneath reports whether p is dir or inside it (both clean, absolute).
func beneath(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}
