package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

func lastCall(t *testing.T, fs *fakeState) (string, map[string]any) {
	t.Helper()
	calls := fs.Backend.Calls()
	if len(calls) == 0 {
		t.Fatal("no call")
	}
	return decodeCall(t, calls[len(calls)-1])
}

// callAt is the i-th call the backend received.
func callAt(t *testing.T, fs *fakeState, i int) (string, map[string]any) {
	t.Helper()
	calls := fs.Backend.Calls()
	if len(calls) <= i {
		t.Fatalf("no call #%d (only %d)", i, len(calls))
	}
	return decodeCall(t, calls[i])
}

func decodeCall(t *testing.T, c recordedCall) (string, map[string]any) {
	t.Helper()
	if c.Node != tools.OperatorNode {
		t.Errorf("%s called as %q, want the operator", c.Op, c.Node)
	}
	var args map[string]any
	if err := json.Unmarshal(c.Args, &args); err != nil {
		t.Fatal(err)
	}
	return c.Op, args
}

func TestHumanCommandsMapToOperations(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	wd, _ := os.Getwd()
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		switch op {
		case "terminal_launch", "agent_launch":
			return tools.OKResult(map[string]any{"action": op, "result": map[string]any{"terminal": "n7"}, "state": map[string]any{}})
		case "terminal_snapshot":
			return tools.OKResult(map[string]any{"terminal": "n7", "lines": []string{"$ echo hi", "hi", "$", "", ""}})
		case "terminal_list":
			return tools.OKResult(tools.NodeList{Terminals: []tools.NodeInfo{{Terminal: "n7", Name: "build", Command: []string{"bash", "--norc"}, Owner: "operator", Status: "running", Columns: 120, Rows: 40, Clients: 1}}})
		case "dialog_list":
			return tools.OKResult(tools.DialogList{Dialogs: []tools.Dialog{{ID: "d1", Node: "a1", Kind: "permission", Title: "Run rm?"}}})
		}
		return tools.OKResult(map[string]any{"action": op})
	})
	sd := "--state-dir=" + fs.Dir
	cases := []struct {
		args   []string
		op     string
		want   map[string]any
		stdout string
	}{
		{[]string{sd, "new", "--name", "build", "--", "bash", "--norc", "-i"}, "terminal_launch",
			map[string]any{"name": "build", "command": []any{"bash", "--norc", "-i"}, "cwd": wd}, "n7\n"},
		{[]string{"new", sd, "--cwd", "/tmp"}, "terminal_launch", map[string]any{"cwd": "/tmp"}, "n7\n"},
		{[]string{sd, "agent", "custom", "--", "my-agent", "--flag"}, "agent_launch",
			map[string]any{"agent": "custom", "command": []any{"my-agent", "--flag"}, "cwd": wd}, "n7\n"},
		{[]string{sd, "agent", "claude", "--policy", "ci"}, "agent_launch",
			map[string]any{"agent": "claude", "policy": "ci", "cwd": wd}, "n7\n"},
		{[]string{sd, "snapshot", "n7"}, "terminal_snapshot", map[string]any{"terminal": "n7"}, "$ echo hi\nhi\n$\n"},
		{[]string{sd, "send", "n7", "echo", "hi"}, "terminal_submit", map[string]any{"terminal": "n7", "text": "echo hi"}, ""},
		{[]string{sd, "kill", "n7"}, "terminal_close", map[string]any{"terminal": "n7"}, ""},
		{[]string{sd, "open", "n7"}, "terminal_external", map[string]any{"terminal": "n7"}, ""},
		{[]string{sd, "answer", "d1", "allow"}, "dialog_answer", map[string]any{"dialog": "d1", "mode": "allow", "surface": "cli"}, ""},
		{[]string{sd, "answer", "d1", "always"}, "dialog_answer", map[string]any{"dialog": "d1", "mode": "always", "surface": "cli"}, ""},
		{[]string{sd, "answer", "d2", "deny", "--selection", "B"}, "dialog_answer", map[string]any{"dialog": "d2", "mode": "deny", "surface": "cli", "selection": "B"}, ""},
		{[]string{sd, "ls"}, "terminal_list", map[string]any{}, ""},
		{[]string{sd, "dialogs"}, "dialog_list", map[string]any{}, ""},
	}
	for _, c := range cases {
		n := len(fs.Backend.Calls())
		code, out, errb := runHuman(t, c.args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", c.args, code, errb)
		}
		// The command's operation (open first resolves NODE with
		// terminal_list; new --name may then list the nodes to tell
		// whether the name was taken).
		op, args := callAt(t, fs, n)
		for i := n + 1; op != c.op && i < len(fs.Backend.Calls()); i++ {
			op, args = callAt(t, fs, i)
		}
		if op != c.op || !reflect.DeepEqual(args, c.want) {
			t.Errorf("%v: called %s %v, want %s %v", c.args, op, args, c.op, c.want)
		}
		if c.stdout != "" && out != c.stdout {
			t.Errorf("%v: stdout %q, want %q", c.args, out, c.stdout)
		}
	}

	code, out, _ := runHuman(t, sd, "ls")
	if code != ExitOK || !strings.Contains(out, "ID") || !strings.Contains(out, "n7") || !strings.Contains(out, "120x40") || !strings.Contains(out, "bash --norc") {
		t.Errorf("ls table:\n%s", out)
	}
	code, out, _ = runHuman(t, sd, "ls", "--json")
	var list tools.NodeList // terminal_list's value, as the table defines it
	if code != ExitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Terminals) != 1 || list.Terminals[0].Terminal != "n7" {
		t.Errorf("ls --json: %d %s", code, out)
	}
	code, out, _ = runHuman(t, sd, "dialogs")
	if code != ExitOK || !strings.Contains(out, "d1") || !strings.Contains(out, "Run rm?") {
		t.Errorf("dialogs:\n%s", out)
	}
}

func TestHumanStateDirFromEnv(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv("TERMSPRAWL_HOME", fs.Dir)
	if code, _, errb := runHuman(t, "kill", "n1"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if op, _ := lastCall(t, fs); op != "terminal_close" {
		t.Fatal(op)
	}
}

func TestHumanUsageErrors(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	sd := "--state-dir=" + fs.Dir
	for _, args := range [][]string{
		{},
		{sd, "bogus"},
		{sd, "answer", "d1", "maybe"},
		{sd, "agent", "bogus"},
		{sd, "snapshot"},
		{sd, "snapshot", "a", "b"},
		// (A node argument may be an id, a name or an id prefix: the server
		// resolves it, so "../etc" is a name that finds no node, not a
		// usage error.)
		{sd, "ls", "--nope"},
		{sd, "new", "--nope"},
		{sd, "attach", "-bad"},
	} {
		code, out, errb := runHuman(t, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want 2 (stdout %q stderr %q)", args, code, out, errb)
		}
		if errb == "" {
			t.Errorf("%v: nothing on stderr", args)
		}
	}
	if n := len(fs.Backend.Calls()); n != 0 {
		t.Fatalf("usage errors reached the backend: %+v", fs.Backend.Calls())
	}
	if code, out, _ := runHuman(t, "--help"); code != ExitOK || !strings.Contains(out, "attach") {
		t.Fatalf("--help: %d\n%s", code, out)
	}
}

func TestHumanNotRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sd := "--state-dir=" + dir
	for _, args := range [][]string{
		{sd, "ls"}, {sd, "ls", "--json"}, {sd, "snapshot", "n1"}, {sd, "new"}, {sd, "agent", "custom", "--", "x"},
		{sd, "attach", "n1"}, {sd, "open", "n1"}, {sd, "send", "n1", "hi"}, {sd, "kill", "n1"},
		{sd, "dialogs"}, {sd, "answer", "d1", "deny"}, {sd, "doctor"}, {sd, "doctor", "--json"},
	} {
		code, out, errb := runHuman(t, args...)
		if code != ExitNotRunning {
			t.Errorf("%v: exit %d, want 3 (%s)", args, code, errb)
		}
		// One clear sentence, without the agents' transport advice.
		if args[len(args)-1] != "--json" && !strings.HasPrefix(errb, "termsprawl is not running (state dir "+dir+")") || strings.Contains(errb, "Mutations") || strings.Count(errb, "\n") > 1 {
			t.Errorf("%v: stderr %q", args, errb)
		}
		if args[1] != "doctor" && out != "" {
			t.Errorf("%v: stdout %q", args, out)
		}
	}
	// down when nothing runs is success (CONTRACT §10), also twice.
	for range 2 {
		if code, out, errb := runHuman(t, sd, "down"); code != ExitOK || !strings.Contains(out, "not running") {
			t.Errorf("down while not running: exit %d (%q %q), want 0", code, out, errb)
		}
	}
	// A stale endpoint (nothing listens) is "not running" too.
	fs := newFakeState(t)
	fs.Close()
	if code, _, errb := runHuman(t, "--state-dir", fs.Dir, "ls"); code != ExitNotRunning {
		t.Errorf("stale endpoint: exit %d (%s)", code, errb)
	}
	// A stale lock naming a dead pid.
	if err := tools.WriteJSONAtomic(tools.LockPath(dir), map[string]any{"pid": 0x7ffffff0, "instance_id": "x"}); err != nil {
		t.Fatal(err)
	}
	if code, out, errb := runHuman(t, sd, "down"); code != ExitOK || !strings.Contains(out, "which is gone") {
		t.Errorf("down with a stale lock: exit %d (%s%s)", code, out, errb)
	}
}

func TestHumanAppSaysNo(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.ErrResult(tools.Errorf(tools.KindNotFound, "no terminal n9"))
	})
	code, _, errb := runHuman(t, "--state-dir", fs.Dir, "snapshot", "n9")
	if code != ExitNo || errb != "termsprawl snapshot: no node n9\n" {
		t.Fatalf("exit %d: %q", code, errb)
	}
}

func TestHumanAttach(t *testing.T) {
	fs := newFakeState(t)
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.OKResult(tools.NodeList{Terminals: []tools.NodeInfo{{Terminal: "n1", Status: "running"}}})
	})
	t.Setenv("TMUX", "/tmp/tmux-1/default,1,0")
	t.Setenv("TMUX_PANE", "%1")
	var gotArgv, gotEnv []string
	old := execFn
	execFn = func(path string, argv []string, env []string) error {
		gotArgv, gotEnv = argv, env
		return errors.New("stubbed")
	}
	defer func() { execFn = old }()
	oldTerm := stdinIsTerminal
	stdinIsTerminal = func() bool { return true }
	defer func() { stdinIsTerminal = oldTerm }()

	code, _, errb := runHuman(t, "--state-dir", fs.Dir, "--tmux-socket", "sock1", "attach", "n1")
	if code != ExitNo || !strings.Contains(errb, "stubbed") {
		t.Fatalf("exit %d: %s", code, errb)
	}
	want := []string{"tmux", "-L", "sock1", "attach-session", "-t", "ts-n1"}
	if !reflect.DeepEqual(gotArgv, want) {
		t.Fatalf("argv %v, want %v", gotArgv, want)
	}
	for _, kv := range gotEnv {
		if strings.HasPrefix(kv, "TMUX=") || strings.HasPrefix(kv, "TMUX_PANE=") {
			t.Errorf("env keeps %s", kv)
		}
	}
	// A node that does not exist is not attached.
	gotArgv = nil
	code, _, _ = runHuman(t, "--state-dir", fs.Dir, "attach", "n2")
	if code != ExitNo || gotArgv != nil {
		t.Fatalf("attach to a missing node: exit %d argv %v", code, gotArgv)
	}
}
