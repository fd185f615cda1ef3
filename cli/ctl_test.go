package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

func TestCtlSessionAnywhere(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv(SessionEnv, "")
	cases := [][]string{
		{"--session", fs.Agent, "call", "session_info"},
		{"call", "session_info", "--session", fs.Agent},
		{"call", "--session", fs.Agent, "session_info"},
		{"call", "session_info", "{}", "--session=" + fs.Agent},
		{"doctor", "--session", fs.Agent},
		{"--session", fs.Agent, "doctor"},
	}
	for i, args := range cases {
		code, out, errb := runCtl(t, args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d, stderr %s", args, code, errb)
		}
		env := decodeEnvelope(t, out)
		if env["ok"] != true {
			t.Fatalf("%v: %s", args, out)
		}
		if !strings.Contains(out, "\n  \"") {
			t.Errorf("%v: output is not pretty JSON: %s", args, out)
		}
		if n := len(fs.Backend.Calls()); n != i+1 {
			t.Fatalf("%v: backend saw %d calls, want %d", args, n, i+1)
		}
		if c := fs.Backend.Calls()[i]; c.Op != "session_info" || c.Node != "agent1" {
			t.Errorf("%v: backend saw %+v", args, c)
		}
	}
}

func TestCtlSessionFromEnv(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv(SessionEnv, fs.Agent)
	code, out, errb := runCtl(t, "call", "terminal_list")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if env := decodeEnvelope(t, out); env["ok"] != true {
		t.Fatal(out)
	}
	// The flag wins over the environment.
	t.Setenv(SessionEnv, filepath.Join(t.TempDir(), "sessions", "nope.json"))
	if code, _, errb := runCtl(t, "--session", fs.Agent, "call", "terminal_list"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
}

func TestCtlMissingSession(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv(SessionEnv, "")
	empty := t.TempDir() // a state dir without sessions/operator.json
	t.Setenv("TERMSPRAWL_HOME", empty)
	for _, args := range [][]string{{"doctor"}, {"call", "session_info"}, {"mcp"}, {"call", "terminal_list", "{}"}} {
		code, out, errb := runCtl(t, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		// The contract's sentence on its own line, then the file looked for.
		if !strings.HasPrefix(errb, MissingSessionMessage+"\n") || !strings.Contains(errb, tools.OperatorSessionPath(empty)) {
			t.Errorf("%v: stderr %q", args, errb)
		}
		if out != "" {
			t.Errorf("%v: stdout %q", args, out)
		}
	}
	if n := len(fs.Backend.Calls()); n != 0 {
		t.Fatalf("backend saw %d calls", n)
	}
}

func TestCtlUsageBeforeIO(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv(SessionEnv, "")
	// A session path that does not exist: usage errors must come first.
	missing := filepath.Join(t.TempDir(), "sessions", "missing.json")
	for _, sess := range []string{fs.Agent, missing} {
		cases := []struct {
			args []string
			want string
		}{
			{[]string{"call", "no_such_op"}, "unknown operation"},
			{[]string{"call", "terminal_list", "{bad json"}, "not valid JSON"},
			{[]string{"call", "terminal_list", "[]"}, "JSON object"},
			{[]string{"call", "terminal_list", `{"bogus":1}`}, "unknown argument"},
			{[]string{"call", "terminal_snapshot", "{}"}, "missing required argument"},
			{[]string{"call", "terminal_snapshot", `{"terminal":""}`}, "terminal"},
			{[]string{"call", "dialog_answer", `{"dialog":"d","mode":"maybe"}`}, "mode"},
		}
		for _, c := range cases {
			args := append([]string{"--session", sess}, c.args...)
			code, out, errb := runCtl(t, args...)
			if code != ExitUsage {
				t.Errorf("%v: exit %d, want 2 (stderr %s)", args, code, errb)
			}
			if out != "" {
				t.Errorf("%v: stdout %q", args, out)
			}
			if !strings.Contains(errb, c.want) {
				t.Errorf("%v: stderr %q lacks %q", args, errb, c.want)
			}
		}
	}
	if n := len(fs.Backend.Calls()); n != 0 {
		t.Fatalf("backend saw %d calls", n)
	}
}

func TestCtlParseErrors(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv(SessionEnv, fs.Agent)
	for _, args := range [][]string{
		{},
		{"bogus"},
		{"call"},
		{"call", "terminal_list", "{}", "extra"},
		{"--nope", "doctor"},
		{"doctor", "--nope"},
		{"--wait", "soon", "doctor"},
		{"--retry", "x", "doctor"},
		{"--wait", "-1s", "doctor"},
		{"--retry", "-1", "doctor"},
	} {
		code, out, errb := runCtl(t, args...)
		if code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
		if out != "" {
			t.Errorf("%v: stdout %q", args, out)
		}
		if errb == "" {
			t.Errorf("%v: nothing on stderr", args)
		}
	}
	if n := len(fs.Backend.Calls()); n != 0 {
		t.Fatalf("backend saw %d calls", n)
	}
	// --help is not an error.
	code, out, _ := runCtl(t, "call", "--help")
	if code != ExitOK || !strings.Contains(out, "terminal_submit") {
		t.Fatalf("call --help: exit %d\n%s", code, out)
	}
	code, out, _ = runCtl(t, "--version")
	if code != ExitOK || !strings.Contains(out, "termsprawlctl") {
		t.Fatalf("--version: exit %d %q", code, out)
	}
}

func TestCtlAppSaysNo(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	fs.Backend.SetReply(func(_ context.Context, op string, args json.RawMessage) tools.Result {
		return tools.ErrResult(tools.Errorf(tools.KindNotFound, "no terminal %q", "x"))
	})
	code, out, _ := runCtl(t, "--session", fs.Agent, "call", "terminal_snapshot", `{"terminal":"x"}`)
	if code != ExitNo {
		t.Fatalf("exit %d, want 1", code)
	}
	env := decodeEnvelope(t, out)
	if env["ok"] != false || env["kind"] != "not_found" {
		t.Fatalf("envelope %v", env)
	}
	code, out, _ = runCtl(t, "--session", fs.Agent, "doctor")
	if code != ExitNo || decodeEnvelope(t, out)["ok"] != false {
		t.Fatalf("doctor: exit %d %s", code, out)
	}
}

func TestCtlUnavailable(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	fs.RemoveEndpoint(t)
	code, out, _ := runCtl(t, "--session", fs.Agent, "call", "session_info")
	if code != ExitNotRunning {
		t.Fatalf("exit %d, want 3 (not running)", code)
	}
	env := decodeEnvelope(t, out)
	if env["kind"] != "unavailable" || !strings.HasPrefix(env["error"].(string), "Tool connection unavailable: ") {
		t.Fatalf("envelope %v", env)
	}
}

func TestCtlWaitForEndpoint(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	fs.RemoveEndpoint(t)
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		code, out, _ := runCtl(t, "--wait", "30s", "--session", fs.Agent, "call", "session_info")
		done <- result{code, out}
	}()
	select {
	case r := <-done:
		t.Fatalf("returned before the endpoint existed: %d %s", r.code, r.out)
	case <-time.After(300 * time.Millisecond):
	}
	fs.Endpoint.InstanceID = "fake-2"
	fs.WriteEndpoint(t)
	select {
	case r := <-done:
		if r.code != ExitOK || decodeEnvelope(t, r.out)["ok"] != true {
			t.Fatalf("exit %d %s", r.code, r.out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("call --wait did not complete after the endpoint appeared")
	}
}

// Outside a node, with no --session and no TERMSPRAWL_SESSION_FILE, the
// operator session of the state dir is used (CONTRACT §10).
func TestCtlDefaultOperatorSession(t *testing.T) {
	fs := newFakeState(t)
	t.Setenv(SessionEnv, "")
	t.Setenv("TERMSPRAWL_HOME", fs.Dir)
	code, out, errb := runCtl(t, "doctor")
	if code != ExitOK || decodeEnvelope(t, out)["ok"] != true {
		t.Fatalf("doctor: exit %d\n%s%s", code, out, errb)
	}
	if c := fs.Backend.Calls(); len(c) != 1 || c[0].Node != tools.OperatorNode {
		t.Fatalf("backend saw %+v, want one call as the operator", c)
	}
	// The environment still wins over the default.
	t.Setenv(SessionEnv, fs.Agent)
	if code, _, errb := runCtl(t, "call", "terminal_list"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if c := fs.Backend.Calls(); c[len(c)-1].Node != "agent1" {
		t.Fatalf("called as %q, want agent1", c[len(c)-1].Node)
	}
}

// An explicit session file that does not exist: the unavailable envelope
// (exit 1, CONTRACT §4) and a sentence naming the file.
func TestCtlSessionFileMissing(t *testing.T) {
	t.Setenv(SessionEnv, "")
	missing := filepath.Join(t.TempDir(), "sessions", "gone.json")
	code, out, errb := runCtl(t, "--session", missing, "doctor")
	if code != ExitNo || decodeEnvelope(t, out)["kind"] != "unavailable" {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if !strings.Contains(errb, missing) || !strings.Contains(errb, "does not exist") {
		t.Fatalf("stderr %q", errb)
	}
}

// Not running: exit 3 for doctor and call, with one sentence on stderr.
func TestCtlNotRunning(t *testing.T) {
	t.Parallel()
	fs := newFakeState(t)
	fs.Close() // a stale endpoint: connection refused
	for _, args := range [][]string{{"doctor"}, {"call", "terminal_list"}, {"call", "terminal_close", `{"terminal":"x"}`}} {
		code, out, errb := runCtl(t, append([]string{"--session", fs.Operator}, args...)...)
		if code != ExitNotRunning || decodeEnvelope(t, out)["kind"] != "unavailable" || !strings.Contains(errb, "termsprawl is not running") {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errb)
		}
	}
}
