package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kong"

	"github.com/termsprawl/termsprawl/tools"
)

func TestSendArgs(t *testing.T) {
	t.Parallel()
	cases := []struct{ in, want []string }{
		{[]string{"send", "build", "ls", "-la"}, []string{"send", "build", "--", "ls", "-la"}},
		{[]string{"send", "build", "-la"}, []string{"send", "build", "--", "-la"}},
		{[]string{"--state-dir", "/s", "send", "build", "--help"}, []string{"--state-dir", "/s", "send", "build", "--help"}},
		{[]string{"send", "build", "-h"}, []string{"send", "build", "-h"}},
		{[]string{"send", "build", "x", "--help"}, []string{"send", "build", "--", "x", "--help"}},
		{[]string{"type", "build", "-la"}, []string{"type", "build", "--", "-la"}},
		{[]string{"paste", "build", "-"}, []string{"paste", "build", "--", "-"}},
		{[]string{"press", "--json", "build", "C-c"}, []string{"press", "--json", "build", "--", "C-c"}},
		{[]string{"--state-dir=/s", "send", "--tmux-socket", "x", "b", "a"}, []string{"--state-dir=/s", "send", "--tmux-socket", "x", "b", "--", "a"}},
		{[]string{"send", "build", "--", "-x"}, []string{"send", "build", "--", "-x"}},
		{[]string{"send", "build"}, []string{"send", "build"}},
		{[]string{"send", "--help"}, []string{"send", "--help"}},
		{[]string{"snapshot", "send", "x"}, []string{"snapshot", "send", "x"}},
		{[]string{"--tmux-socket", "send", "ls", "build", "x"}, []string{"--tmux-socket", "send", "ls", "build", "x"}},
	}
	for _, c := range cases {
		if got := sendArgs(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("sendArgs(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Through kong: the text arrives verbatim.
	fs := newFakeState(t)
	for _, c := range []struct {
		args []string
		text string
	}{
		{[]string{"send", "build", "ls", "-la"}, "ls -la"},
		{[]string{"send", "build", "-la"}, "-la"},
		{[]string{"send", "build", "--", "--", "x"}, "-- x"},
		{[]string{"send", "build", "git", "commit", "-m", "a -- b", "--amend"}, "git commit -m a -- b --amend"},
		{[]string{"send", "build", ""}, ""},
	} {
		args := append([]string{"--state-dir", fs.Dir}, c.args...)
		if code, _, errb := runHuman(t, args...); code != ExitOK {
			t.Fatalf("%q: exit %d: %s", c.args, code, errb)
		}
		op, a := lastCall(t, fs)
		if op != "terminal_submit" || a["text"] != c.text || a["terminal"] != "build" {
			t.Errorf("%q: %s %v, want text %q", c.args, op, a, c.text)
		}
	}
}

// humanValueFlags must name exactly the global flags that take a value, or
// sendArgs misplaces NODE.
func TestHumanValueFlagsMatchGrammar(t *testing.T) {
	t.Parallel()
	var g humanGrammar
	p, err := kong.New(&g, kong.Name(humanName))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, f := range p.Model.Flags {
		if !f.IsBool() && f.Name != "help" {
			want["--"+f.Name] = true
		}
	}
	if !reflect.DeepEqual(want, humanValueFlags) {
		t.Fatalf("global value flags %v, humanValueFlags %v", want, humanValueFlags)
	}
}

// Every command of both CLIs shows examples in its --help, and `help CMD`
// prints the same.
func TestEveryCommandHasExamples(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		grammar any
		run     func(t *testing.T, args ...string) (int, string, string)
	}{
		{humanName, &humanGrammar{}, runHuman},
		{ctlName, &ctlGrammar{}, runCtl},
	} {
		p, err := kong.New(c.grammar, kong.Name(c.name))
		if err != nil {
			t.Fatal(err)
		}
		code, out, _ := c.run(t, "--help")
		if code != ExitOK || !strings.Contains(out, "\nExamples:\n") {
			t.Errorf("%s --help: exit %d, no examples:\n%s", c.name, code, out)
		}
		for _, n := range p.Model.Leaves(true) {
			if n.Hidden {
				continue
			}
			code, out, errb := c.run(t, n.Name, "--help")
			if code != ExitOK || !strings.Contains(out, "\nExamples:\n  "+c.name+" ") {
				t.Errorf("%s %s --help: exit %d, no examples:\n%s%s", c.name, n.Name, code, out, errb)
			}
			if strings.Contains(out, "{{name}}") {
				t.Errorf("%s %s --help: placeholder left:\n%s", c.name, n.Name, out)
			}
			code, hout, _ := c.run(t, "help", n.Name)
			if code != ExitOK || hout != out {
				t.Errorf("%s help %s: exit %d, differs from --help:\n%s", c.name, n.Name, code, hout)
			}
		}
	}
}

func TestHelpAndVersion(t *testing.T) {
	for _, run := range []func(t *testing.T, args ...string) (int, string, string){runHuman, runCtl} {
		code, out, _ := run(t, "help")
		if code != ExitOK || !strings.Contains(out, "Usage:") || !strings.Contains(out, "completion") {
			t.Errorf("help: exit %d\n%s", code, out)
		}
		code, out, _ = run(t, "version")
		if code != ExitOK || !regexp.MustCompile(`^termsprawl(ctl)? \S+ \(commit [^,]+, go1\.\d+[^,]*, \w+/\w+\)\n$`).MatchString(out) {
			t.Errorf("version: exit %d %q", code, out)
		}
		code, vout, _ := run(t, "--version")
		if code != ExitOK || vout != out {
			t.Errorf("--version: exit %d %q, want %q", code, vout, out)
		}
		code, out, _ = run(t, "version", "--json")
		var bi buildInfo
		if code != ExitOK || json.Unmarshal([]byte(out), &bi) != nil || bi.GoVersion == "" || bi.Version == "" {
			t.Errorf("version --json: exit %d %q", code, out)
		}
		if code, _, errb := run(t, "help", "bogus"); code != ExitUsage || errb == "" {
			t.Errorf("help bogus: exit %d", code)
		}
	}
	old := Commit
	Commit = "0123456789abcdef0123456789abcdef01234567"
	defer func() { Commit = old }()
	if l := versionLine("termsprawl"); !strings.Contains(l, "commit 0123456789abcdef0123456789abcdef01234567") {
		t.Errorf("versionLine with a commit: %q", l)
	}
}

func TestCompletion(t *testing.T) {
	for _, shell := range completionShells {
		for _, run := range []func(t *testing.T, args ...string) (int, string, string){runHuman, runCtl} {
			code, out, _ := run(t, "completion", shell)
			if code != ExitOK || !strings.Contains(out, "complete ") {
				t.Errorf("completion %s: exit %d\n%s", shell, code, out)
			}
		}
	}
	if code, _, _ := runHuman(t, "completion", "tcsh"); code != ExitUsage {
		t.Errorf("completion tcsh: exit %d, want 2", code)
	}
	// The hook: the shell runs the binary with COMP_LINE set.
	for _, c := range []struct {
		run  func(t *testing.T, args ...string) (int, string, string)
		line string
		want []string
	}{
		{runHuman, "termsprawl sn", []string{"snapshot"}},
		{runHuman, "termsprawl down --", []string{"--all"}},
		{runHuman, "termsprawl up --log-level ", []string{"auto", "debug", "warn"}},
		{runHuman, "termsprawl answer d1 ", []string{"allow", "always", "deny"}},
		{runCtl, "termsprawlctl call terminal_sn", []string{"terminal_snapshot"}},
		{runCtl, "termsprawlctl gu", []string{"guide"}},
	} {
		t.Setenv("COMP_LINE", c.line)
		t.Setenv("COMP_POINT", "")
		t.Setenv("TERMSPRAWL_HOME", t.TempDir())
		code, out, errb := c.run(t)
		for _, w := range c.want {
			if code != ExitOK || !strings.Contains("\n"+out, "\n"+w+"\n") {
				t.Errorf("COMP_LINE=%q: exit %d, want %q in\n%s%s", c.line, code, w, out, errb)
			}
		}
	}
}

func TestResolveNode(t *testing.T) {
	t.Parallel()
	rows := []tools.NodeInfo{
		{Terminal: "build", Name: "build"}, {Terminal: "build-1", Name: "build"},
		{Terminal: "web", Name: "my web"}, {Terminal: "web-2", Name: "my web"},
		{Terminal: "tests", Name: "t"}, {Terminal: "t", Name: "x"},
		{Terminal: "docs", Name: "docs"},
	}
	for word, want := range map[string]string{"build": "build", "build-1": "build-1", "t": "t", "x": "t", "do": "docs", "tes": "tests"} {
		if n, err := resolveNode(rows, word); err != nil || n.Terminal != want {
			t.Errorf("resolveNode(%q) = %q, %v; want %s", word, n.Terminal, err, want)
		}
	}
	for word, want := range map[string]string{
		"my web": `"my web" names 2 nodes (web, web-2)`,
		"bu":     `"bu" names 2 nodes (build, build-1)`,
		"nope":   "no node \"nope\": `termsprawl ls` lists the nodes",
	} {
		if _, err := resolveNode(rows, word); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("resolveNode(%q): %v, want %q", word, err, want)
		}
	}
}

func TestHumanAttachReadOnlyAndExited(t *testing.T) {
	fs := newFakeState(t)
	three := 3
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.OKResult(tools.NodeList{Terminals: []tools.NodeInfo{
			{Terminal: "build", Name: "compile", Status: "running"},
			{Terminal: "done", Status: "exited", ExitCode: &three},
		}})
	})
	var gotArgv []string
	old := execFn
	execFn = func(path string, argv []string, env []string) error {
		gotArgv = argv
		return errors.New("stubbed")
	}
	defer func() { execFn = old }()
	oldTerm := stdinIsTerminal
	stdinIsTerminal = func() bool { return true }
	defer func() { stdinIsTerminal = oldTerm }()

	runHuman(t, "--state-dir", fs.Dir, "--tmux-socket", "s1", "attach", "--read-only", "compile")
	if want := []string{"tmux", "-L", "s1", "attach-session", "-r", "-t", "ts-build"}; !reflect.DeepEqual(gotArgv, want) {
		t.Errorf("attach --read-only by name: argv %q, want %q", gotArgv, want)
	}
	runHuman(t, "--state-dir", fs.Dir, "--tmux-socket", "s1", "attach", "-r", "bu")
	if len(gotArgv) < 5 || gotArgv[4] != "-r" || gotArgv[6] != "ts-build" {
		t.Errorf("attach -r by prefix: argv %q", gotArgv)
	}
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.OKResult(tools.NodeList{Terminals: []tools.NodeInfo{
			{Terminal: "build", Name: "compile", Status: "running", TmuxSocket: "s1-2"},
			{Terminal: "done", Status: "exited", ExitCode: &three, TmuxSocket: "s1"},
		}})
	})
	runHuman(t, "--state-dir", fs.Dir, "--tmux-socket", "s1", "attach", "build")
	if want := []string{"tmux", "-L", "s1-2", "attach-session", "-t", "ts-build"}; !reflect.DeepEqual(gotArgv, want) {
		t.Errorf("attach to a node on a shard: argv %q, want %q", gotArgv, want)
	}
	runHuman(t, "--state-dir", fs.Dir, "--tmux-socket", "s1", "attach", "done")
	if len(gotArgv) < 9 || gotArgv[6] != ";" || gotArgv[7] != "display-message" || !strings.Contains(gotArgv[len(gotArgv)-1], "exited (code 3)") {
		t.Errorf("attach to an exited node: argv %q", gotArgv)
	}
}

// A launch whose program exited within a second (CONTRACT §10): exit 1
// with the code and the last lines; --json prints the node.
func TestHumanLaunchEarlyExit(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		switch op {
		case "terminal_launch":
			return tools.OKResult(map[string]any{"action": op, "state": map[string]any{},
				"result": map[string]any{"terminal": "term-1", "status": "exited",
					"exited": map[string]any{"exit_code": 127, "screen_tail": []string{"sh: 1: nosuchcmd: not found", "", ""}}}})
		}
		return tools.OKResult(tools.NodeList{})
	})
	code, out, errb := runHuman(t, "--state-dir", fs.Dir, "new", "--", "sh", "-c", "nosuchcmd")
	if code != ExitNo || out != "term-1\n" || !strings.Contains(errb, "exit code 127") || !strings.Contains(errb, "| sh: 1: nosuchcmd: not found") || !strings.Contains(errb, "`termsprawl kill term-1`") {
		t.Fatalf("exit %d\nstdout %q\nstderr:\n%s", code, out, errb)
	}
	code, out, _ = runHuman(t, "--state-dir", fs.Dir, "new", "--json", "--", "sh", "-c", "nosuchcmd")
	var node map[string]any
	if code != ExitNo || json.Unmarshal([]byte(out), &node) != nil || node["terminal"] != "term-1" || node["exited"] == nil {
		t.Fatalf("new --json: exit %d\n%s", code, out)
	}
}

// A reused name: the id is printed and stderr says how to name the node.
func TestHumanLaunchNameTaken(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		if op == "terminal_launch" {
			return tools.OKResult(map[string]any{"action": op, "state": map[string]any{}, "result": map[string]any{"terminal": "build-1"}})
		}
		return tools.OKResult(tools.NodeList{Terminals: []tools.NodeInfo{{Terminal: "build", Name: "build"}, {Terminal: "build-1", Name: "build"}}})
	})
	code, out, errb := runHuman(t, "--state-dir", fs.Dir, "new", "--name", "build")
	if code != ExitOK || out != "build-1\n" || !strings.Contains(errb, `the name "build" is already used by node build; this node's id is build-1`) {
		t.Fatalf("exit %d %q\n%s", code, out, errb)
	}
}

// The human CLI speaks its own commands, never operation names.
func TestHumanErrorsInOwnTerms(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	msgs := map[string]string{
		"snapshot": `no terminal "x": call terminal_list to see the terminals`,
		"new":      "node limit reached (512): close terminals with terminal_close first",
		"answer":   `no pending dialog "d9": call dialog_list`,
		"send":     `"b" names 2 terminals (build, build-1): use one of their ids`,
	}
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		m := map[string]string{"terminal_snapshot": msgs["snapshot"], "terminal_launch": msgs["new"], "dialog_answer": msgs["answer"], "terminal_submit": msgs["send"]}
		return tools.ErrResult(tools.Errorf(tools.KindNotFound, "%s", m[op]))
	})
	opName := regexp.MustCompile(`\b(terminal|dialog|agent|session|guide|watch)_[a-z_]+\b`)
	for _, args := range [][]string{{"snapshot", "x"}, {"new"}, {"answer", "d9", "allow"}, {"send", "b", "hi"}} {
		code, _, errb := runHuman(t, append([]string{"--state-dir", fs.Dir}, args...)...)
		if code != ExitNo || opName.MatchString(errb) || !strings.HasPrefix(errb, "termsprawl "+args[0]+": ") || !strings.Contains(errb, "termsprawl ") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb)
		}
	}
	if got := humanize(msgs["new"]); got != "node limit reached (512): close some with `termsprawl kill NODE` first" {
		t.Errorf("humanize: %q", got)
	}
}

func TestHumanSnapshotJSONAndExited(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	one := 1
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.OKResult(tools.Snapshot{Terminal: "t1", Screen: tools.Screen{Lines: []string{"boom", ""}, Revision: 9}, Status: "exited", ExitCode: &one})
	})
	code, out, errb := runHuman(t, "--state-dir", fs.Dir, "snapshot", "t1")
	if code != ExitOK || out != "boom\n" || !strings.Contains(errb, "exited with code 1") || !strings.Contains(errb, "`termsprawl kill t1`") {
		t.Fatalf("snapshot of an exited node: exit %d %q %q", code, out, errb)
	}
	code, out, _ = runHuman(t, "--state-dir", fs.Dir, "snapshot", "--json", "t1")
	var snap tools.Snapshot
	if code != ExitOK || json.Unmarshal([]byte(out), &snap) != nil || snap.Revision != 9 || snap.Lines[0] != "boom" {
		t.Fatalf("snapshot --json: exit %d %s", code, out)
	}
}

func TestUpTexts(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "no nodes", 1: "1 node", 2: "2 nodes"} {
		if got := nodesText(n); got != want {
			t.Errorf("nodesText(%d) = %q", n, got)
		}
	}
	var b bytes.Buffer
	printServing(&b, tools.Endpoint{URL: "http://127.0.0.1:1/call", PID: 7, Version: "v"}, "/s", "sock", "/s/sessions/operator.json", 1, tools.DefaultDetachKey, tools.DefaultAnswerKey)
	if !strings.Contains(b.String(), "sock (1 node)\n") {
		t.Errorf("banner:\n%s", b.String())
	}
	if logLevel("auto", &b) != slog.LevelInfo || logLevel("debug", &b) != slog.LevelDebug || logLevel("warn", &b) != slog.LevelWarn || logLevel("error", &b) != slog.LevelError {
		t.Error("logLevel")
	}
}

func TestShardSockets(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMUX_TMPDIR", dir)
	sd := tmuxSocketDir()
	if err := os.MkdirAll(sd, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"ts", "ts-2", "ts-10", "ts-x", "ts-2x", "ts-", "other-2", "ts2"} {
		if err := os.WriteFile(filepath.Join(sd, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := shardSockets("ts", []string{"ts", "ts-3", ""})
	if want := []string{"ts", "ts-10", "ts-2", "ts-3"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("shardSockets = %q, want %q", got, want)
	}
}
