package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tools"
)

// Binaries built once for the end-to-end tests.
var (
	e2eBinDir   string
	e2eBuildErr error
)

func TestMain(m *testing.M) {
	flag.Parse()
	// Run inside a termsprawl node, the in-process CLI would act with
	// that node's session (innode.go): the tests set what they need.
	for _, k := range []string{SessionEnv, "TERMSPRAWL_NODE", "TMUX", "TMUX_PANE"} {
		os.Unsetenv(k)
	}
	os.Exit(func() int {
		if !testing.Short() {
			if _, err := exec.LookPath("tmux"); err == nil {
				dir, err := os.MkdirTemp("", "termsprawl-e2e-bin-")
				if err != nil {
					e2eBuildErr = err
				} else {
					defer os.RemoveAll(dir)
					cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
						"github.com/termsprawl/termsprawl/cmd/termsprawl",
						"github.com/termsprawl/termsprawl/cmd/termsprawlctl")
					if out, err := cmd.CombinedOutput(); err != nil {
						e2eBuildErr = fmt.Errorf("go build: %v\n%s", err, out)
					} else {
						e2eBinDir = dir
					}
				}
			}
		}
		return m.Run()
	}())
}

// e2e is one end-to-end environment: a private tmux socket and a
// temporary state directory.
type e2e struct {
	t      *testing.T
	tmux   *tmuxtest.Server
	state  string
	env    []string
	ts     string // termsprawl binary
	ctl    string // termsprawlctl binary
	oper   string // operator session file
	active []*proc
}

// proc is a background process; exited closes when it has been reaped.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // valid after exited
}

// waitExit reports whether p exits within d.
func (p *proc) waitExit(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

func newE2E(t *testing.T) *e2e {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end test skipped in -short mode")
	}
	srv := tmuxtest.New(t) // skips without tmux; kills only its own server at cleanup
	if e2eBuildErr != nil {
		t.Fatal(e2eBuildErr)
	}
	if e2eBinDir == "" {
		testenv.SkipOrFail(t, "binaries were not built")
	}
	state := filepath.Join(t.TempDir(), "state")
	var env []string
	for _, kv := range tmuxtest.Env() {
		if strings.HasPrefix(kv, "TERMSPRAWL_") {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "TERMSPRAWL_HOME="+state, "TERMSPRAWL_TMUX_SOCKET="+srv.Socket)
	e := &e2e{t: t, tmux: srv, state: state, env: env,
		ts:   filepath.Join(e2eBinDir, "termsprawl"),
		ctl:  filepath.Join(e2eBinDir, "termsprawlctl"),
		oper: tools.OperatorSessionPath(state)}
	t.Cleanup(func() {
		for _, p := range e.active {
			_ = p.cmd.Process.Kill() // a no-op once it has exited
			p.waitExit(10 * time.Second)
		}
	})
	return e
}

// start starts bin in the background; it is killed at cleanup.
func (e *e2e) start(bin string, stdout, stderr *syncBuffer, args ...string) *proc {
	e.t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = e.env
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	e.active = append(e.active, p)
	return p
}

// upWith starts `termsprawl up ARGS…`, waits for its endpoint.json and
// its banner, and returns its stdout and stderr.
func (e *e2e) upWith(args ...string) (*proc, *syncBuffer, *syncBuffer) {
	e.t.Helper()
	out, errb := &syncBuffer{}, &syncBuffer{}
	p := e.start(e.ts, out, errb, append([]string{"up"}, args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	go func() {
		select {
		case <-p.exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		e.t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	if _, err := tools.WaitForEndpoint(ctx, tools.EndpointPath(e.state), func(ep tools.Endpoint) bool { return ep.PID == pid }); err != nil {
		e.t.Fatalf("termsprawl up did not serve: %v\nstdout:\n%s\nstderr:\n%s", err, out.String(), errb.String())
	}
	// up prints its banner once it serves (as e.up waits for it).
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "termsprawlctl --session") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return p, out, errb
}

// up starts `termsprawl up` and waits for its endpoint.json.
func (e *e2e) up() (*proc, *syncBuffer) {
	e.t.Helper()
	p, _, errb := e.upWith()
	return p, errb
}

// run runs bin to completion and returns its exit code and output.
func (e *e2e) run(bin string, args ...string) (int, string, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			e.t.Fatalf("%s %v: %v", filepath.Base(bin), args, err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errb.String()
}

// must runs bin and fails the test unless it exits 0.
func (e *e2e) must(bin string, args ...string) string {
	e.t.Helper()
	code, out, errb := e.run(bin, args...)
	if code != 0 {
		e.t.Fatalf("%s %v: exit %d\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), args, code, out, errb)
	}
	return out
}

// launchShell starts a bash node and returns its id.
func (e *e2e) launchShell() string {
	e.t.Helper()
	id := strings.TrimSpace(e.must(e.ts, "new", "--", "bash", "--norc", "--noprofile"))
	if !tools.ValidNodeID(id) {
		e.t.Fatalf("termsprawl new printed %q, not a node id", id)
	}
	return id
}

// submit runs text in node id through termsprawlctl and waits for want.
func (e *e2e) submit(session, id, text, want string) map[string]any {
	e.t.Helper()
	args, _ := json.Marshal(map[string]any{"terminal": id, "text": text, "wait": map[string]any{"wait": "text", "text": want}})
	out := e.must(e.ctl, "--session", session, "call", "terminal_submit", string(args))
	env := decodeEnvelope(e.t, out)
	if env["ok"] != true {
		e.t.Fatalf("terminal_submit: %s", out)
	}
	return env
}

// down stops termsprawl and checks that no control client is left.
func (e *e2e) down(up *proc) {
	e.t.Helper()
	out := e.must(e.ts, "down")
	if !strings.Contains(out, "stopped") {
		e.t.Errorf("down printed %q", out)
	}
	if !up.waitExit(15 * time.Second) {
		e.t.Fatal("termsprawl up still runs after down")
	}
	if pids := tmuxtest.ControlClients(e.tmux.Socket); len(pids) > 0 {
		e.t.Fatalf("tmux -C clients left after down: %v", pids)
	}
	// Nothing runs any more: down is still success (CONTRACT §10).
	if code, out, _ := e.run(e.ts, "down"); code != ExitOK || !strings.Contains(out, "not running") {
		e.t.Errorf("second down: exit %d (%q), want 0 and \"not running\"", code, out)
	}
}

func TestE2EBasic(t *testing.T) {
	e := newE2E(t)
	up, _ := e.up()

	id := e.launchShell()
	env := e.submit(e.oper, id, "echo hi", "hi")
	if w, _ := env["value"].(map[string]any)["result"].(map[string]any)["wait"].(map[string]any); w == nil {
		t.Errorf("receipt has no result.wait: %v", env)
	}

	var rows []map[string]any
	out := e.must(e.ts, "ls", "--json")
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		var obj map[string][]map[string]any
		if err2 := json.Unmarshal([]byte(out), &obj); err2 != nil {
			t.Fatalf("ls --json: %v\n%s", err, out)
		}
		rows = obj["terminals"]
	}
	found := false
	for _, r := range rows {
		if r["terminal"] == id {
			found = true
		}
	}
	if !found {
		t.Fatalf("ls --json lacks %s:\n%s", id, out)
	}
	if out := e.must(e.ts, "ls"); !strings.Contains(out, id) || !strings.Contains(out, "bash") {
		t.Errorf("ls:\n%s", out)
	}

	snap := e.must(e.ts, "snapshot", id)
	if !strings.Contains(snap, "\nhi\n") && !strings.HasPrefix(snap, "hi\n") {
		t.Errorf("snapshot lacks the output line hi:\n%s", snap)
	}

	doc := e.must(e.ts, "doctor")
	for _, want := range []string{"ok tmux:", "ok state dir:", "ok lock:", "ok endpoint:", "ok node " + id + ":"} {
		if !strings.Contains(doc, want) {
			t.Errorf("doctor lacks %q:\n%s", want, doc)
		}
	}
	if code, out, _ := e.run(e.ctl, "--session", e.oper, "doctor"); code != 0 || decodeEnvelope(t, out)["ok"] != true {
		t.Errorf("termsprawlctl doctor: exit %d\n%s", code, out)
	}

	e.down(up)
	// The node's tmux session keeps running after down.
	if _, err := e.tmux.Cmd("has-session", "-t", "=ts-"+id); err != nil {
		t.Errorf("tmux session of %s gone after down: %v", id, err)
	}
	// Not running is exit 3 for every command, doctor too (CONTRACT §10).
	if code, _, _ := e.run(e.ts, "doctor"); code != ExitNotRunning {
		t.Errorf("doctor while down: exit %d, want 3", code)
	}
	if code, _, _ := e.run(e.ts, "ls"); code != ExitNotRunning {
		t.Errorf("ls while down: exit %d, want 3", code)
	}
}

func TestE2ERestart(t *testing.T) {
	e := newE2E(t)
	up1, _ := e.up()
	id := e.launchShell()
	nodeSession := tools.SessionPath(e.state, id)
	e.submit(e.oper, id, "echo before-$((6*7))", "before-42")
	// A second node keeps printing through the kill and the restart.
	ticker := strings.TrimSpace(e.must(e.ts, "new", "--", "sh", "-c", "i=0; while :; do echo tick-$i; i=$((i+1)); sleep 0.005; done"))

	// The orchestrator dies hard, mid-stream.
	if err := up1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !up1.waitExit(15 * time.Second) {
		t.Fatal("termsprawl up survived SIGKILL")
	}

	code, out, _ := e.run(e.ctl, "--session", e.oper, "call", "session_info")
	if code != ExitNotRunning {
		t.Fatalf("call while down: exit %d, want 3\n%s", code, out)
	}
	if env := decodeEnvelope(t, out); env["kind"] != "unavailable" {
		t.Fatalf("call while down: %v", env)
	}

	// Output printed while termsprawl is down (typed straight into tmux).
	e.tmux.Must("send-keys", "-t", "=ts-"+id+":", "-l", "echo during-$((6*7))")
	e.tmux.Must("send-keys", "-t", "=ts-"+id+":", "Enter")
	deadline := time.Now().Add(20 * time.Second)
	for {
		pane, _ := e.tmux.Cmd("capture-pane", "-p", "-t", "=ts-"+id+":")
		if strings.Contains(pane, "during-42") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bash did not print during-42:\n%s", pane)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// A waiting call started during the outage completes after restart.
	wout, werr := &syncBuffer{}, &syncBuffer{}
	waiter := e.start(e.ctl, wout, werr, "--wait", "60s", "--session", e.oper, "call", "session_info")
	if waiter.waitExit(200 * time.Millisecond) {
		t.Fatalf("--wait call returned while termsprawl was down: %v\n%s%s", waiter.err, wout.String(), werr.String())
	}

	up2, _ := e.up()
	if !waiter.waitExit(90 * time.Second) {
		t.Fatal("--wait call did not complete after termsprawl restarted")
	}
	if waiter.err != nil {
		t.Fatalf("--wait call: %v\nstdout:\n%s\nstderr:\n%s", waiter.err, wout.String(), werr.String())
	}
	if env := decodeEnvelope(t, wout.String()); env["ok"] != true {
		t.Fatalf("--wait call: %v", env)
	}

	// The node's own session file works across the restart.
	out = e.must(e.ctl, "--session", nodeSession, "call", "session_info")
	info := decodeEnvelope(t, out)["value"].(map[string]any)
	if info["node"] != id {
		t.Errorf("session_info of the node's own session: node %v, want %s", info["node"], id)
	}
	e.submit(e.oper, id, "echo after-$((6*7))", "after-42")

	// The ticking node was re-adopted mid-stream: a wait for its output
	// after now completes, and it shows the same screen as tmux.
	wargs := `{"terminal":"` + ticker + `","wait":"regex","pattern":"tick-[0-9]+","timeout_ms":10000}`
	if env := decodeEnvelope(t, e.must(e.ctl, "--session", e.oper, "call", "terminal_wait_for", wargs)); env["ok"] != true {
		t.Fatalf("wait on the re-adopted ticking node: %v", env)
	}

	snap := e.must(e.ts, "snapshot", id)
	for _, want := range []string{"before-42", "during-42", "after-42"} {
		if !strings.Contains(snap, want) {
			t.Errorf("snapshot after restart lacks %s:\n%s", want, snap)
		}
	}

	e.down(up2)
}

func TestE2EDetach(t *testing.T) {
	e := newE2E(t)
	out := e.must(e.ts, "up", "--detach")
	for _, want := range []string{"http://127.0.0.1:", e.state, e.tmux.Socket, e.oper, "termsprawl attach", "termsprawlctl --session " + e.oper + " call terminal_list"} {
		if !strings.Contains(out, want) {
			t.Errorf("up --detach output lacks %q:\n%s", want, out)
		}
	}
	ep, err := tools.ReadEndpoint(tools.EndpointPath(e.state))
	if err != nil {
		t.Fatal(err)
	}
	// Kill the daemon at cleanup if the test fails before down.
	t.Cleanup(func() {
		if pidAlive(ep.PID) && looksLikeTermsprawl(e.state, ep.PID) {
			_ = syscall.Kill(ep.PID, syscall.SIGKILL)
		}
	})
	if code, _, errb := e.run(e.ts, "up", "--detach"); code != ExitNo {
		t.Errorf("second up --detach: exit %d, want 1\n%s", code, errb)
	}
	e.must(e.ctl, "--session", e.oper, "call", "terminal_list")
	out = e.must(e.ts, "down")
	if !strings.Contains(out, "stopped") {
		t.Errorf("down: %s", out)
	}
	if pidAlive(ep.PID) {
		t.Fatal("daemon still alive after down")
	}
	if pids := tmuxtest.ControlClients(e.tmux.Socket); len(pids) > 0 {
		t.Fatalf("tmux -C clients left after down: %v", pids)
	}
	if data, err := os.ReadFile(filepath.Join(e.state, LogFile)); err != nil || len(data) == 0 {
		t.Errorf("no daemon log: %v", err)
	}
}
