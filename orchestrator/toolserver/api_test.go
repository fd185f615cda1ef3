package toolserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/schematest"
	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/orchestrator"
	"github.com/termsprawl/termsprawl/tools"
)

// These tests run the real Serve on a private tmux server and a temporary
// state dir and talk to it through tools.Call with real session files, or
// through raw HTTP where the client would refuse the request itself.

// apiServe is one running Serve.
type apiServe struct {
	t      testing.TB
	tmux   *tmuxtest.Server
	dir    string
	info   ServeInfo
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
	// hooks are the running server's test seams.
	hooks *hooks
	// log is the server's log (mcpServe's servers only).
	log *logBuffer
}

// apiStart runs Serve on dir and the tmux server, and waits until it is
// ready. It is stopped at cleanup if the test did not stop it.
func apiStart(t testing.TB, tmux *tmuxtest.Server, dir string) *apiServe {
	t.Helper()
	return apiStartWith(t, tmux, dir, orchestrator.Config{})
}

// apiStartWith is apiStart with more of the configuration (notify flags).
func apiStartWith(t testing.TB, tmux *tmuxtest.Server, dir string, cfg orchestrator.Config) *apiServe {
	t.Helper()
	cfg.StateDir, cfg.Socket, cfg.Version, cfg.LaunchWatch = dir, tmux.Socket, "test", 100*time.Millisecond
	readyWithin := 30 * time.Second
	if len(cfg.Hosts) > 0 {
		readyWithin = 60 * time.Second // its hosts connect before Serve is ready
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &apiServe{t: t, tmux: tmux, dir: dir, cancel: cancel, done: make(chan error, 1), hooks: &hooks{}}
	s.hooks.engine = func(o *orchestrator.Orchestrator) {
		orchestrator.SetBeforeRegisterHook(o, func(id string) {
			if f := s.hooks.beforeRegister; f != nil {
				f(id)
			}
		})
	}
	ready := make(chan ServeInfo, 1)
	go func() {
		s.done <- serve(ctx, cfg, func(i ServeInfo) { ready <- i }, s.hooks)
	}()
	select {
	case s.info = <-ready:
	case err := <-s.done:
		cancel()
		t.Fatalf("Serve returned before ready: %v", err)
	case <-time.After(readyWithin):
		cancel()
		t.Fatalf("Serve not ready within %v", readyWithin)
	}
	t.Cleanup(func() { s.stop() })
	return s
}

// stop cancels Serve and waits for it to return.
func (s *apiServe) stop() {
	s.t.Helper()
	s.once.Do(func() {
		s.cancel()
		select {
		case err := <-s.done:
			if err != nil {
				s.t.Errorf("Serve returned %v after cancel", err)
			}
		case <-time.After(20 * time.Second):
			s.t.Error("Serve did not return within 20s of cancel")
		}
	})
}

func (s *apiServe) op() string { return s.info.OperatorSession }

func (s *apiServe) session(node string) string { return tools.SessionPath(s.dir, node) }

// apiNewState returns a fresh private tmux server and state dir path.
func apiNewState(t testing.TB) (*tmuxtest.Server, string) {
	t.Helper()
	return tmuxtest.New(t), filepath.Join(t.TempDir(), "state")
}

func apiArgs(t testing.TB, args any) json.RawMessage {
	t.Helper()
	if args == nil {
		return nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type apiM = map[string]any

func apiCall(t testing.TB, sess, op string, args any) tools.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	return tools.Call(ctx, sess, tools.Request{Operation: op, Args: apiArgs(t, args)}, tools.CallOptions{})
}

// apiOK calls op and fails the test unless it succeeds; it decodes the
// value into out when out is not nil and returns the raw value.
func apiOK(t testing.TB, sess, op string, args any, out any) json.RawMessage {
	t.Helper()
	res := apiCall(t, sess, op, args)
	if !res.OK {
		t.Fatalf("%s %s as %s: %s: %s", op, apiArgs(t, args), filepath.Base(sess), res.Kind, res.Error)
	}
	// Every value the server sends matches the output schema of the table.
	if err := schematest.ValidateValue(op, res.Value); err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(res.Value, out); err != nil {
			t.Fatalf("%s: decode %s: %v", op, res.Value, err)
		}
	}
	return res.Value
}

// apiFail calls op and fails the test unless it fails with kind.
func apiFail(t testing.TB, sess, op string, args any, kind tools.Kind) tools.Result {
	t.Helper()
	res := apiCall(t, sess, op, args)
	if res.OK || res.Kind != kind {
		t.Fatalf("%s %s as %s: want kind %s, got ok=%v kind=%s error=%q value=%s",
			op, apiArgs(t, args), filepath.Base(sess), kind, res.OK, res.Kind, res.Error, res.Value)
	}
	if res.Error == "" {
		t.Fatalf("%s: failure without an error sentence", op)
	}
	return res
}

// apiReceipt is the receipt of a mutation.
type apiReceipt struct {
	Action         string          `json:"action"`
	Result         json.RawMessage `json:"result"`
	IdempotencyKey string          `json:"idempotency_key"`
	State          json.RawMessage `json:"state"`
}

func apiMutate(t testing.TB, sess, op string, args any) (apiReceipt, json.RawMessage) {
	t.Helper()
	var r apiReceipt
	raw := apiOK(t, sess, op, args, &r)
	if r.Action != op || len(r.Result) == 0 || len(r.State) == 0 {
		t.Fatalf("%s: not a receipt: %s", op, raw)
	}
	return r, raw
}

// apiLaunch launches argv through the API as the owner of sess and returns
// the node id.
func apiLaunch(t testing.TB, sess string, argv ...string) string {
	t.Helper()
	r, _ := apiMutate(t, sess, "terminal_launch", apiM{"command": argv, "columns": 80, "rows": 24, "cwd": t.TempDir()})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil || info.Terminal == "" {
		t.Fatalf("launch result %s: %v", r.Result, err)
	}
	return info.Terminal
}

func apiSnapshot(t testing.TB, sess, term string) tools.Snapshot {
	t.Helper()
	var snap tools.Snapshot
	apiOK(t, sess, "terminal_snapshot", apiM{"terminal": term}, &snap)
	return snap
}

func apiScreen(t testing.TB, sess, term string) string {
	t.Helper()
	return strings.Join(apiSnapshot(t, sess, term).Lines, "\n")
}

// apiWaitScreen polls snapshots until the screen contains text (used for
// typed text, which terminal_wait_for deliberately does not match).
func apiWaitScreen(t testing.TB, sess, term, text string) string {
	t.Helper()
	var scr string
	if !testenv.Until(15*time.Second, func() bool { scr = apiScreen(t, sess, term); return strings.Contains(scr, text) }) {
		t.Fatalf("screen of %s never showed %q:\n%s", term, text, scr)
	}
	return scr
}

// apiQuiet waits until the node printed nothing for 300 ms.
func apiQuiet(t testing.TB, sess, term string) {
	t.Helper()
	apiOK(t, sess, "terminal_wait_for", apiM{"terminal": term, "wait": "quiet", "quiet_ms": 300, "timeout_ms": 15000}, nil)
}

// apiRaw sends one raw HTTP request to the endpoint. mod may change it.
func apiRaw(t testing.TB, ep tools.Endpoint, token string, body io.Reader, mod func(*http.Request)) (int, tools.Result, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ep.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	if mod != nil {
		mod(req)
	}
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("raw request: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	var res tools.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("reply (HTTP %d) is not the envelope: %v: %q", resp.StatusCode, err, data)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("reply Content-Type %q", ct)
	}
	return resp.StatusCode, res, resp.Header
}

// apiRawBig POSTs body over a raw connection, writing it in the
// background, and returns the reply the server sends.
func apiRawBig(t testing.TB, ep tools.Endpoint, token string, body []byte, chunked bool) (int, tools.Result) {
	t.Helper()
	u, err := url.Parse(ep.URL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	hdr := "POST /call HTTP/1.1\r\nHost: " + u.Host + "\r\nAuthorization: Bearer " + token + "\r\nContent-Type: application/json\r\n"
	if chunked {
		hdr += "Transfer-Encoding: chunked\r\n\r\n"
	} else {
		hdr += fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body))
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		w := bufio.NewWriter(conn)
		w.WriteString(hdr)
		if !chunked {
			w.Write(body)
		} else {
			for rest := body; len(rest) > 0; {
				n := min(len(rest), 32<<10)
				fmt.Fprintf(w, "%x\r\n", n)
				w.Write(rest[:n])
				w.WriteString("\r\n")
				rest = rest[n:]
			}
			w.WriteString("0\r\n\r\n")
		}
		w.Flush() // fails once the server has closed: expected
	}()
	defer func() { conn.Close(); <-written }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read reply: %v", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read reply body: %v", err)
	}
	var res tools.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("reply (HTTP %d) is not the envelope: %v: %q", resp.StatusCode, err, data)
	}
	return resp.StatusCode, res
}

// apiRes formats a result for failure messages.
func apiRes(r tools.Result) string {
	b, _ := json.Marshal(r)
	if len(b) > 400 {
		b = append(b[:400], "…"...)
	}
	return string(b)
}

func apiToken(t testing.TB, sessFile string) string {
	t.Helper()
	s, err := tools.ReadSession(sessFile)
	if err != nil {
		t.Fatal(err)
	}
	return s.Token
}

func apiMode(t testing.TB, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func apiGone(t testing.TB, path string) {
	t.Helper()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still exists (stat: %v)", path, err)
	}
}

// apiDeadPID returns the pid of a process that has exited and been reaped.
func apiDeadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestServeFilesLockAndRestart(t *testing.T) {
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)

	// endpoint.json
	epPath := tools.EndpointPath(dir)
	if m := apiMode(t, epPath); m != 0o600 {
		t.Fatalf("endpoint.json mode %04o", m)
	}
	ep, err := tools.ReadEndpoint(epPath)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^http://127\.0\.0\.1:([0-9]+)/call$`).FindStringSubmatch(ep.URL)
	if m == nil || m[1] == "0" {
		t.Fatalf("endpoint url %q", ep.URL)
	}
	if ep.PID != os.Getpid() || ep.InstanceID == "" || ep != s.info.Endpoint {
		t.Fatalf("endpoint %+v, ready reported %+v, pid %d", ep, s.info.Endpoint, os.Getpid())
	}

	// sessions/operator.json
	if s.op() != tools.OperatorSessionPath(dir) {
		t.Fatalf("operator session %q", s.op())
	}
	if m := apiMode(t, s.op()); m != 0o600 {
		t.Fatalf("operator.json mode %04o", m)
	}
	opSess, err := tools.ReadSession(s.op())
	if err != nil || opSess.Role != tools.RoleOperator || opSess.Node != tools.OperatorNode {
		t.Fatalf("operator session %+v %v", opSess, err)
	}
	var info struct {
		Node, Role string
		InstanceID string `json:"instance_id"`
		TmuxSocket string `json:"tmux_socket"`
	}
	apiOK(t, s.op(), "session_info", nil, &info)
	if info.Node != tools.OperatorNode || info.Role != tools.RoleOperator || info.InstanceID != ep.InstanceID || info.TmuxSocket != tmux.Socket {
		t.Fatalf("session_info %+v", info)
	}

	// server.lock
	if m := apiMode(t, tools.LockPath(dir)); m != 0o600 {
		t.Fatalf("server.lock mode %04o", m)
	}
	var li tools.LockInfo
	b, err := os.ReadFile(tools.LockPath(dir))
	if err != nil || json.Unmarshal(b, &li) != nil || li.PID != os.Getpid() || li.InstanceID != ep.InstanceID {
		t.Fatalf("server.lock %q %v", b, err)
	}

	// A second Serve on the same state dir is refused while the first runs.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = Serve(ctx, orchestrator.Config{StateDir: dir, Socket: tmux.Socket}, func(ServeInfo) { t.Error("second Serve became ready") })
	var le *LockError
	if !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Fatalf("second Serve: %v (%T), want *LockError with pid %d", err, err, os.Getpid())
	}
	if ep2, err := tools.ReadEndpoint(epPath); err != nil || ep2 != ep {
		t.Fatalf("endpoint after refused Serve: %+v %v", ep2, err)
	}
	apiOK(t, s.op(), "session_info", nil, nil)

	// Clean shutdown removes endpoint.json; the operator session stays.
	s.stop()
	apiGone(t, epPath)
	if res := apiCall(t, s.op(), "session_info", nil); res.OK || res.Kind != tools.KindUnavailable {
		t.Fatalf("call with Serve stopped: %s", apiRes(res))
	}

	// A new Serve works, with a new instance and the same operator token.
	s2 := apiStart(t, tmux, dir)
	if s2.info.Endpoint.InstanceID == ep.InstanceID {
		t.Fatal("restart reused the instance id")
	}
	if tok := apiToken(t, s2.op()); tok != opSess.Token {
		t.Fatal("the operator token changed across a restart")
	}
	apiOK(t, s2.op(), "session_info", nil, &info)
	if info.InstanceID != s2.info.Endpoint.InstanceID {
		t.Fatalf("session_info after restart %+v", info)
	}
	s2.stop()

	// A stale server.lock (and endpoint.json) of a dead pid is taken over.
	dead := apiDeadPID(t)
	if err := tools.WriteJSONAtomic(tools.LockPath(dir), tools.LockInfo{PID: dead, InstanceID: "stale"}); err != nil {
		t.Fatal(err)
	}
	if err := tools.WriteEndpoint(epPath, tools.Endpoint{URL: "http://127.0.0.1:1/call", InstanceID: "stale", PID: dead}); err != nil {
		t.Fatal(err)
	}
	s3 := apiStart(t, tmux, dir)
	b, _ = os.ReadFile(tools.LockPath(dir))
	if json.Unmarshal(b, &li) != nil || li.PID != os.Getpid() || li.InstanceID != s3.info.Endpoint.InstanceID {
		t.Fatalf("server.lock after takeover %q", b)
	}
	if ep3, err := tools.ReadEndpoint(epPath); err != nil || ep3.InstanceID != s3.info.Endpoint.InstanceID {
		t.Fatalf("endpoint after takeover %+v %v", ep3, err)
	}
	apiOK(t, s3.op(), "session_info", nil, nil)
}

func TestAPITokensAndOwnership(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 11 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	ep := s.info.Endpoint

	x := apiLaunch(t, op, "cat") // the operator's node
	a := apiLaunch(t, op, "cat") // an agent node
	b := apiLaunch(t, op, "cat") // another agent node
	sa, sb := s.session(a), s.session(b)
	for _, id := range []string{x, a, b} {
		p := s.session(id)
		if m := apiMode(t, p); m != 0o600 {
			t.Fatalf("%s mode %04o", p, m)
		}
		ss, err := tools.ReadSession(p)
		if err != nil || ss.Node != id || ss.Role != tools.RoleAgent {
			t.Fatalf("session of %s: %+v %v", id, ss, err)
		}
	}
	var who struct{ Node, Role string }
	apiOK(t, sa, "session_info", nil, &who)
	if who.Node != a || who.Role != tools.RoleAgent {
		t.Fatalf("session_info as %s: %+v", a, who)
	}

	// Bad credentials over raw HTTP.
	body := `{"operation":"session_info","args":{}}`
	unknown, _ := tools.NewToken()
	for name, tok := range map[string]string{"unknown token": unknown, "malformed token": "abc", "missing bearer": ""} {
		st, res, _ := apiRaw(t, ep, tok, strings.NewReader(body), nil)
		if st != http.StatusUnauthorized || res.OK || res.Kind != tools.KindUnauthorized {
			t.Fatalf("%s: HTTP %d %s", name, st, apiRes(res))
		}
	}
	st, res, _ := apiRaw(t, ep, "", strings.NewReader(body), func(r *http.Request) { r.Header.Set("Authorization", "Basic "+apiToken(t, op)) })
	if st != http.StatusUnauthorized || res.Kind != tools.KindUnauthorized {
		t.Fatalf("basic auth: HTTP %d %s", st, apiRes(res))
	}

	// Another node's token may not drive a third node.
	for _, c := range []struct {
		op   string
		args apiM
	}{
		{"terminal_type", apiM{"terminal": x, "text": "FROM-B"}},
		{"terminal_submit", apiM{"terminal": x, "text": "FROM-B"}},
		{"terminal_resize", apiM{"terminal": x, "columns": 40, "rows": 10}},
		{"terminal_signal", apiM{"terminal": x, "signal": "KILL"}},
		{"terminal_close", apiM{"terminal": x}},
		{"terminal_type", apiM{"terminal": a, "text": "FROM-B"}},
	} {
		apiFail(t, sb, c.op, c.args, tools.KindForbidden)
	}
	// An agent may read any node but not type into the operator's.
	apiOK(t, sa, "terminal_snapshot", apiM{"terminal": x}, nil)
	apiOK(t, sa, "terminal_read", apiM{"terminal": x}, nil)
	var list struct{ Terminals []tools.NodeInfo }
	apiOK(t, sa, "terminal_list", nil, &list)
	if len(list.Terminals) != 3 {
		t.Fatalf("terminal_list as agent: %+v", list)
	}
	apiFail(t, sa, "terminal_type", apiM{"terminal": x, "text": "FROM-A"}, tools.KindForbidden)
	if snap := apiSnapshot(t, op, x); snap.Columns != 80 || snap.Status != tools.StatusRunning || strings.Contains(strings.Join(snap.Lines, "\n"), "FROM-") {
		t.Fatalf("forbidden calls changed %s: %+v", x, snap)
	}

	// An agent drives itself, the nodes it launched and their descendants.
	apiOK(t, sa, "terminal_type", apiM{"terminal": a, "text": "SELF-A"}, nil)
	c := apiLaunch(t, sa, "cat")
	sc := s.session(c)
	d := apiLaunch(t, sc, "cat")
	apiOK(t, sa, "terminal_list", nil, &list)
	owners := map[string]tools.NodeInfo{}
	for _, n := range list.Terminals {
		owners[n.Terminal] = n
	}
	if owners[c].Owner != a || owners[c].Parent != a || owners[d].Owner != c || owners[x].Owner != tools.OperatorNode {
		t.Fatalf("owners: %+v", owners)
	}
	apiOK(t, sa, "terminal_type", apiM{"terminal": c, "text": "A-TO-C"}, nil)
	apiOK(t, sa, "terminal_type", apiM{"terminal": d, "text": "A-TO-D"}, nil)
	apiOK(t, sa, "terminal_resize", apiM{"terminal": d, "columns": 60, "rows": 20}, nil)
	apiFail(t, sc, "terminal_type", apiM{"terminal": a, "text": "C-TO-A"}, tools.KindForbidden)
	apiFail(t, sb, "terminal_type", apiM{"terminal": d, "text": "B-TO-D"}, tools.KindForbidden)
	apiWaitScreen(t, op, d, "A-TO-D")
	apiWaitScreen(t, op, c, "A-TO-C")
	apiWaitScreen(t, op, a, "SELF-A")

	// A closed node's token is unauthorized afterwards.
	tokD := apiToken(t, s.session(d))
	apiOK(t, sa, "terminal_close", apiM{"terminal": d}, nil)
	apiGone(t, s.session(d))
	st, res, _ = apiRaw(t, ep, tokD, strings.NewReader(body), nil)
	if st != http.StatusUnauthorized || res.Kind != tools.KindUnauthorized {
		t.Fatalf("closed node's token: HTTP %d %s", st, apiRes(res))
	}

	// Tokens survive a restart; ownership too.
	s.stop()
	s2 := apiStart(t, tmux, dir)
	apiOK(t, sa, "session_info", nil, &who)
	if who.Node != a {
		t.Fatalf("session_info after restart: %+v", who)
	}
	apiOK(t, sa, "terminal_type", apiM{"terminal": c, "text": "AGAIN"}, nil)
	apiFail(t, sa, "terminal_type", apiM{"terminal": x, "text": "FROM-A"}, tools.KindForbidden)
	st, res, _ = apiRaw(t, s2.info.Endpoint, tokD, strings.NewReader(body), nil)
	if st != http.StatusUnauthorized || res.Kind != tools.KindUnauthorized {
		t.Fatalf("closed node's token after restart: HTTP %d %s", st, apiRes(res))
	}
	apiWaitScreen(t, op, c, "AGAIN")
}

func TestAPIReceipts(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 5 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()

	// A launch receipt without a key.
	r, raw := apiMutate(t, op, "terminal_launch", apiM{"command": []string{"cat"}, "columns": 80, "rows": 24})
	var info tools.NodeInfo
	var state tools.Snapshot
	if json.Unmarshal(r.Result, &info) != nil || json.Unmarshal(r.State, &state) != nil ||
		info.Terminal == "" || state.Terminal != info.Terminal || len(state.Lines) != 24 || r.IdempotencyKey != "" {
		t.Fatalf("launch receipt %s", raw)
	}
	if len(raw) > tools.MaxReceiptBytes || bytes.Contains(r.State, []byte(`"truncated"`)) {
		t.Fatalf("a small receipt was truncated: %s", raw)
	}
	n := info.Terminal

	// The same key types once and returns the same receipt.
	args := apiM{"terminal": n, "text": "ONCE-ONLY", "idempotency_key": "type-1"}
	r1, raw1 := apiMutate(t, op, "terminal_type", args)
	var in tools.InputResult
	if r1.IdempotencyKey != "type-1" || json.Unmarshal(r1.Result, &in) != nil || in.Terminal != n || json.Unmarshal(r1.State, &state) != nil || state.Terminal != n {
		t.Fatalf("type receipt %s", raw1)
	}
	_, raw2 := apiMutate(t, op, "terminal_type", args)
	if !bytes.Equal(raw1, raw2) {
		t.Fatalf("repeat returned another receipt:\n%s\n%s", raw1, raw2)
	}
	apiWaitScreen(t, op, n, "ONCE-ONLY")
	apiQuiet(t, op, n)
	if scr := apiScreen(t, op, n); strings.Count(scr, "ONCE-ONLY") != 1 {
		t.Fatalf("text typed %d times:\n%s", strings.Count(scr, "ONCE-ONLY"), scr)
	}

	// The same key with other args or another operation: conflict.
	apiFail(t, op, "terminal_type", apiM{"terminal": n, "text": "OTHER", "idempotency_key": "type-1"}, tools.KindConflict)
	apiFail(t, op, "terminal_press", apiM{"terminal": n, "keys": "Enter", "idempotency_key": "type-1"}, tools.KindConflict)
	// Keys belong to their caller: an agent's type-1 is its own.
	a := apiLaunch(t, op, "cat")
	ra, _ := apiMutate(t, s.session(a), "terminal_type", apiM{"terminal": a, "text": "AGENT-KEY", "idempotency_key": "type-1"})
	if ra.IdempotencyKey != "type-1" {
		t.Fatalf("agent receipt key %q", ra.IdempotencyKey)
	}
	ents, err := os.ReadDir(tools.ReceiptsPath(dir))
	if err != nil || len(ents) == 0 {
		t.Fatalf("receipts dir: %v %v", ents, err)
	}
	// One private directory per caller, one private file per key.
	files := 0
	for _, e := range ents {
		sub := filepath.Join(tools.ReceiptsPath(dir), e.Name())
		if m := apiMode(t, sub); !e.IsDir() || m != 0o700 {
			t.Fatalf("receipt dir %s mode %04o", e.Name(), m)
		}
		inner, _ := os.ReadDir(sub)
		for _, f := range inner {
			files++
			if m := apiMode(t, filepath.Join(sub, f.Name())); m != 0o600 {
				t.Fatalf("receipt %s mode %04o", f.Name(), m)
			}
		}
	}
	if files < 2 {
		t.Fatalf("%d receipt files, want one per caller and key", files)
	}

	// The receipt survives a restart: same bytes, nothing typed again.
	s.stop()
	apiStart(t, tmux, dir) // stopped by its cleanup
	_, raw3 := apiMutate(t, op, "terminal_type", args)
	if !bytes.Equal(raw1, raw3) {
		t.Fatalf("after restart the repeat returned another receipt:\n%s\n%s", raw1, raw3)
	}
	apiFail(t, op, "terminal_type", apiM{"terminal": n, "text": "OTHER", "idempotency_key": "type-1"}, tools.KindConflict)
	apiOK(t, op, "terminal_type", apiM{"terminal": n, "text": "-END"}, nil)
	apiWaitScreen(t, op, n, "-END")
	apiQuiet(t, op, n)
	if scr := apiScreen(t, op, n); strings.Count(scr, "ONCE-ONLY") != 1 || strings.Contains(scr, "OTHER") {
		t.Fatalf("after restart:\n%s", scr)
	}
}

// TestAPIReceiptTruncated fills a 1000x1000 screen so the receipt's state
// would pass 256 KiB: only state is replaced.
func TestAPIReceiptTruncated(t *testing.T) {
	t.Parallel()
	testenv.SkipShort(t, "big screen")
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	fill := `awk 'BEGIN { s = sprintf("%998s", ""); gsub(/ /, "x", s); for (i = 0; i < 999; i++) print s; printf "FILLED" }'; exec cat`
	r, _ := apiMutate(t, op, "terminal_launch", apiM{"command": []string{"sh", "-c", fill}, "columns": 1000, "rows": 1000})
	var info tools.NodeInfo
	if err := json.Unmarshal(r.Result, &info); err != nil {
		t.Fatal(err)
	}
	n := info.Terminal
	apiOK(t, op, "terminal_wait_for", apiM{"terminal": n, "wait": "text", "text": "FILLED", "after": 0, "timeout_ms": 30000}, nil)
	rt, raw := apiMutate(t, op, "terminal_type", apiM{"terminal": n, "text": "z", "idempotency_key": "big"})
	if len(raw) > tools.MaxReceiptBytes {
		t.Fatalf("receipt is %d bytes", len(raw))
	}
	var st map[string]any
	if err := json.Unmarshal(rt.State, &st); err != nil || st["truncated"] != true || st["hint"] == nil || len(st) != 2 {
		t.Fatalf("state not truncated: %.300s", rt.State)
	}
	var in tools.InputResult
	if json.Unmarshal(rt.Result, &in) != nil || in.Terminal != n || rt.IdempotencyKey != "big" {
		t.Fatalf("result or key lost: %s", raw)
	}
	// The full screen is still there for terminal_snapshot.
	if snap := apiSnapshot(t, op, n); snap.Rows != 1000 || !strings.HasPrefix(snap.Lines[0], "xxxx") {
		t.Fatalf("snapshot %dx%d %.40q", snap.Columns, snap.Rows, snap.Lines[0])
	}
}

func TestAPIBadInputOverHTTP(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 3 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	ep := s.info.Endpoint
	tok := apiToken(t, s.op())
	n := apiLaunch(t, s.op(), "cat")
	u, err := url.Parse(ep.URL)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()

	big := `{"operation":"terminal_type","args":{"terminal":"` + n + `","text":"` + strings.Repeat("B", 2<<20) + `"}}`
	cases := []struct {
		name   string
		body   string
		mod    func(*http.Request)
		status int
		kind   tools.Kind
	}{
		{"malformed json", `{"operation":"session_info",`, nil, 400, tools.KindUsage},
		{"not an object", `["session_info"]`, nil, 400, tools.KindUsage},
		{"empty body", ``, nil, 400, tools.KindUsage},
		{"unknown top-level field", `{"operation":"session_info","args":{},"as":"operator"}`, nil, 400, tools.KindUsage},
		{"trailing data", `{"operation":"session_info"} {}`, nil, 400, tools.KindUsage},
		{"missing operation", `{"args":{}}`, nil, 400, tools.KindUsage},
		{"unknown operation", `{"operation":"terminal_explode","args":{}}`, nil, 400, tools.KindUsage},
		{"unknown arg", `{"operation":"session_info","args":{"node":"operator"}}`, nil, 400, tools.KindUsage},
		{"unknown arg on mutation", `{"operation":"terminal_type","args":{"terminal":"` + n + `","text":"BAD-1","as":"x"}}`, nil, 400, tools.KindUsage},
		{"missing arg", `{"operation":"terminal_type","args":{"terminal":"` + n + `"}}`, nil, 400, tools.KindUsage},
		{"wrong type string", `{"operation":"terminal_snapshot","args":{"terminal":5}}`, nil, 400, tools.KindUsage},
		{"wrong type int", `{"operation":"terminal_resize","args":{"terminal":"` + n + `","columns":"90","rows":20}}`, nil, 400, tools.KindUsage},
		{"args not an object", `{"operation":"session_info","args":[1]}`, nil, 400, tools.KindUsage},
		{"NUL in string", `{"operation":"terminal_type","args":{"terminal":"` + n + `","text":"BAD-2\u0000x"}}`, nil, 400, tools.KindUsage},
		{"text content type", `{"operation":"session_info"}`, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }, 415, tools.KindUsage},
		{"GET", ``, func(r *http.Request) { r.Method = http.MethodGet }, 405, tools.KindUsage},
		{"other path", `{"operation":"session_info"}`, func(r *http.Request) { r.URL.Path = "/admin" }, 404, tools.KindNotFound},
		{"Origin header", `{"operation":"session_info"}`, func(r *http.Request) { r.Header.Set("Origin", "http://127.0.0.1:"+port) }, 403, tools.KindForbidden},
		{"null Origin", `{"operation":"session_info"}`, func(r *http.Request) { r.Header.Set("Origin", "null") }, 403, tools.KindForbidden},
		{"Host localhost", `{"operation":"session_info"}`, func(r *http.Request) { r.Host = "localhost:" + port }, 403, tools.KindForbidden},
		{"Host without port", `{"operation":"session_info"}`, func(r *http.Request) { r.Host = "127.0.0.1" }, 403, tools.KindForbidden},
		{"Host evil", `{"operation":"session_info"}`, func(r *http.Request) { r.Host = "evil.example:" + port }, 403, tools.KindForbidden},
	}
	for _, c := range cases {
		st, res, _ := apiRaw(t, ep, tok, strings.NewReader(c.body), c.mod)
		if st != c.status || res.OK || res.Kind != c.kind || res.Error == "" {
			t.Errorf("%s: HTTP %d %s, want %d %s", c.name, st, apiRes(res), c.status, c.kind)
		}
	}
	// Bodies over 1 MiB, announced and chunked: the server answers before
	// it has read them, so they are sent over a raw connection that keeps
	// reading the reply while the write fails.
	for _, chunked := range []bool{false, true} {
		st, res := apiRawBig(t, ep, tok, []byte(big), chunked)
		if st != http.StatusRequestEntityTooLarge || res.OK || res.Kind != tools.KindUsage {
			t.Errorf("2 MiB body (chunked %v): HTTP %d %s", chunked, st, apiRes(res))
		}
	}
	// The control: the same request done right succeeds, with the Host the
	// client sends by default (127.0.0.1:PORT).
	st, res, _ := apiRaw(t, ep, tok, strings.NewReader(`{"operation":"session_info","args":{}}`), func(r *http.Request) {
		if r.Host != "" && r.Host != "127.0.0.1:"+port {
			t.Errorf("default Host %q", r.Host)
		}
	})
	if st != 200 || !res.OK {
		t.Fatalf("good request: HTTP %d %s", st, apiRes(res))
	}
	// Nothing was typed by the refused requests.
	apiOK(t, s.op(), "terminal_type", apiM{"terminal": n, "text": "GOOD"}, nil)
	scr := apiWaitScreen(t, s.op(), n, "GOOD")
	if strings.Contains(scr, "BAD") || strings.Contains(scr, "BBB") {
		t.Fatalf("a refused request typed:\n%s", scr)
	}
}

// apiGoroutinesSettle waits until at most limit goroutines run.
func apiGoroutinesSettle(limit int, within time.Duration) int {
	n := runtime.NumGoroutine()
	testenv.Until(within, func() bool { n = runtime.NumGoroutine(); return n <= limit })
	return n
}

func apiGoroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

func TestAPIConcurrentCallsNoLeak(t *testing.T) {
	tmux, dir := apiNewState(t)
	// Let earlier tests' background goroutines finish.
	base := apiGoroutinesSettle(0, 500*time.Millisecond)
	s := apiStart(t, tmux, dir)
	n := apiLaunch(t, s.op(), "cat")
	apiOK(t, s.op(), "terminal_type", apiM{"terminal": n, "text": "LIVE"}, nil)
	apiWaitScreen(t, s.op(), n, "LIVE")
	serving := runtime.NumGoroutine()

	// Each goroutine uses a client of its own so its connections can be
	// closed afterwards and the count compared while Serve still runs.
	const workers, perWorker = 50, 10
	var failed atomic.Int32
	var firstErr atomic.Value
	var wg sync.WaitGroup
	transports := make([]*http.Transport, workers)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	for w := 0; w < workers; w++ {
		tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2}
		transports[w] = tr
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := tools.CallOptions{HTTPClient: &http.Client{Transport: tr}}
			for i := 0; i < perWorker; i++ {
				req := tools.Request{Operation: "session_info"}
				if (w+i)%2 == 0 {
					req = tools.Request{Operation: "terminal_snapshot", Args: json.RawMessage(`{"terminal":"` + n + `"}`)}
				}
				res := tools.Call(ctx, s.op(), req, opts)
				ok := res.OK
				if ok && req.Operation == "terminal_snapshot" {
					var snap tools.Snapshot
					ok = json.Unmarshal(res.Value, &snap) == nil && snap.Terminal == n && strings.Contains(strings.Join(snap.Lines, "\n"), "LIVE")
				}
				if !ok {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%s: %s %s %s", req.Operation, res.Kind, res.Error, res.Value))
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if f := failed.Load(); f != 0 {
		t.Fatalf("%d of %d calls failed; first: %v", f, workers*perWorker, firstErr.Load())
	}
	t.Logf("%d calls from %d goroutines in %v", workers*perWorker, workers, elapsed)
	for _, tr := range transports {
		tr.CloseIdleConnections()
	}
	const slack = 8
	if got := apiGoroutinesSettle(serving+slack, 5*time.Second); got > serving+slack {
		t.Fatalf("goroutines: %d while serving before the calls, %d after\n%s", serving, got, apiGoroutineDump())
	}
	apiOK(t, s.op(), "session_info", nil, nil)

	s.stop()
	if got := apiGoroutinesSettle(base+slack, 5*time.Second); got > base+slack {
		t.Fatalf("goroutines: %d before Serve, %d after it stopped\n%s", base, got, apiGoroutineDump())
	}
	if !testenv.Until(5*time.Second, func() bool { return !(len(tmuxtest.ControlClients(tmux.Socket)) > 0) }) {
		t.Fatalf("tmux -C clients left after Serve stopped: %v", tmuxtest.ControlClients(tmux.Socket))
	}
	// The node itself keeps running.
	if out := tmux.Must("list-sessions", "-F", "#{session_name}"); !strings.Contains(out, "ts-"+n) {
		t.Fatalf("node session gone after Serve stopped: %q", out)
	}
}

func TestAPIDialogs(t *testing.T) {
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	a := apiLaunch(t, op, "cat")
	b := apiLaunch(t, op, "cat")
	sa, sb := s.session(a), s.session(b)

	request := func(sess string, args apiM) chan tools.Result {
		ch := make(chan tools.Result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			ch <- tools.Call(ctx, sess, tools.Request{Operation: "dialog_request", Args: apiArgs(t, args)}, tools.CallOptions{})
		}()
		return ch
	}
	type dlg struct {
		Dialog, Node, Kind, Title string
	}
	waitListed := func(title string) dlg {
		var l struct{ Dialogs []dlg }
		var found dlg
		if !testenv.Until(15*time.Second, func() bool {
			l.Dialogs = nil
			apiOK(t, op, "dialog_list", nil, &l)
			for _, d := range l.Dialogs {
				if d.Title == title {
					found = d
					return true
				}
			}
			return false
		}) {
			t.Fatalf("dialog %q never listed: %+v", title, l)
		}
		return found
	}
	notReturned := func(ch chan tools.Result) {
		t.Helper()
		select {
		case res := <-ch:
			t.Fatalf("dialog_request returned early: %s", apiRes(res))
		default:
		}
	}
	answer := func(ch chan tools.Result) string {
		t.Helper()
		select {
		case res := <-ch:
			var v struct {
				Answer tools.DialogAnswer `json:"answer"`
			}
			if !res.OK || json.Unmarshal(res.Value, &v) != nil {
				t.Fatalf("dialog_request: %s", apiRes(res))
			}
			return v.Answer.Mode
		case <-time.After(20 * time.Second):
			t.Fatal("dialog_request did not return after the answer")
		}
		return ""
	}

	ch := request(sa, apiM{"kind": "permission", "title": "rm -rf build", "timeout_ms": 30000})
	d := waitListed("rm -rf build")
	if d.Node != a || d.Kind != "permission" || d.Dialog == "" {
		t.Fatalf("listed %+v", d)
	}
	// Other agents may see it (reading), but may not approve it.
	var l struct{ Dialogs []dlg }
	apiOK(t, sb, "dialog_list", nil, &l)
	if len(l.Dialogs) != 1 {
		t.Fatalf("dialog_list as agent: %+v", l)
	}
	for _, sess := range []string{sa, sb} {
		for _, mode := range []string{"allow", "always"} {
			res := apiFail(t, sess, "dialog_answer", apiM{"dialog": d.Dialog, "mode": mode}, tools.KindNotRun)
			if !strings.Contains(res.Error, "not over MCP") {
				t.Fatalf("agent %s: %q", mode, res.Error)
			}
		}
	}
	notReturned(ch)
	waitListed("rm -rf build")
	r, _ := apiMutate(t, op, "dialog_answer", apiM{"dialog": d.Dialog, "mode": "allow"})
	if !bytes.Contains(r.Result, []byte(`"allow"`)) {
		t.Fatalf("answer receipt result %s", r.Result)
	}
	if mode := answer(ch); mode != "allow" {
		t.Fatalf("request answered %q", mode)
	}
	apiOK(t, op, "dialog_list", nil, &l)
	if len(l.Dialogs) != 0 {
		t.Fatalf("answered dialog still listed: %+v", l)
	}
	// Answered twice: conflict, naming the first answer.
	if res := apiFail(t, op, "dialog_answer", apiM{"dialog": d.Dialog, "mode": "deny"}, tools.KindConflict); !strings.Contains(res.Error, "already answered (allow)") {
		t.Fatalf("second answer text %q", res.Error)
	}

	// An agent may deny another's permission.
	ch = request(sa, apiM{"kind": "permission", "title": "push --force", "timeout_ms": 30000})
	d = waitListed("push --force")
	apiOK(t, sb, "dialog_answer", apiM{"dialog": d.Dialog, "mode": "deny"}, nil)
	if mode := answer(ch); mode != "deny" {
		t.Fatalf("request answered %q", mode)
	}

	// Unanswered: the dialog ends as a deny, never an allow.
	var unanswered tools.DialogOutcome
	apiOK(t, sa, "dialog_request", apiM{"kind": "permission", "title": "nobody answers", "timeout_ms": 200}, &unanswered)
	if !unanswered.TimedOut || unanswered.Answer.Mode != tools.AnswerDeny || unanswered.Answer.Reason == "" {
		t.Fatalf("unanswered dialog: %+v", unanswered)
	}
	// Answered after its timeout: conflict, saying it was denied.
	res := apiFail(t, op, "dialog_answer", apiM{"dialog": unanswered.Dialog, "mode": "allow"}, tools.KindConflict)
	if !strings.Contains(res.Error, "timed out") || !strings.Contains(res.Error, "denied") {
		t.Fatalf("late answer text %q", res.Error)
	}
}

func TestAPIWatch(t *testing.T) {
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	n := apiLaunch(t, op, bashArgv()...)
	apiQuiet(t, op, n)

	var w struct {
		Watch string `json:"watch"`
	}
	apiOK(t, op, "watch_start", apiM{"terminal": n, "wait": "text", "text": "WATCH-FIRED"}, &w)
	if w.Watch == "" {
		t.Fatal("no watch id")
	}
	apiFail(t, op, "watch_wait", apiM{"watch": w.Watch, "timeout_ms": 200}, tools.KindTimeout)
	// The echo of the command does not contain the text; its output does.
	apiOK(t, op, "terminal_submit", apiM{"terminal": n, "text": "printf 'WATCH-%s\\n' FIRED"}, nil)
	var fired struct {
		Fired  bool             `json:"fired"`
		Result tools.WaitResult `json:"result"`
	}
	apiOK(t, op, "watch_wait", apiM{"watch": w.Watch, "timeout_ms": 20000}, &fired)
	if !fired.Fired {
		t.Fatalf("watch did not fire: %+v", fired)
	}
	apiFail(t, op, "watch_wait", apiM{"watch": w.Watch, "timeout_ms": 200}, tools.KindNotFound)

	// An agent may watch any node; cancel ends it.
	a := apiLaunch(t, op, "cat")
	apiOK(t, s.session(a), "watch_start", apiM{"terminal": n, "wait": "text", "text": "NEVER-PRINTED"}, &w)
	var c struct{ Cancelled bool }
	apiOK(t, s.session(a), "watch_cancel", apiM{"watch": w.Watch}, &c)
	if !c.Cancelled {
		t.Fatal("watch_cancel did not cancel")
	}
	apiFail(t, op, "watch_wait", apiM{"watch": w.Watch, "timeout_ms": 200}, tools.KindNotFound)
	apiOK(t, op, "watch_cancel", apiM{"watch": w.Watch}, &c)
	if c.Cancelled {
		t.Fatal("second watch_cancel cancelled something")
	}
	apiFail(t, op, "watch_start", apiM{"terminal": "no-such-node", "wait": "text", "text": "x"}, tools.KindNotFound)

	// Cancelled watches stop waiting: their goroutines end.
	base := apiGoroutinesSettle(0, 200*time.Millisecond)
	var ids []string
	for i := 0; i < 20; i++ {
		apiOK(t, op, "watch_start", apiM{"terminal": n, "wait": "regex", "pattern": "NEVER-[0-9]+"}, &w)
		ids = append(ids, w.Watch)
	}
	for _, id := range ids {
		apiOK(t, op, "watch_cancel", apiM{"watch": id}, &c)
		if !c.Cancelled {
			t.Fatalf("watch_cancel %s", id)
		}
	}
	if got := apiGoroutinesSettle(base+4, 5*time.Second); got > base+4 {
		t.Fatalf("goroutines: %d before 20 watches, %d after cancelling them\n%s", base, got, apiGoroutineDump())
	}
}

func TestAPIAgents(t *testing.T) {
	testenv.SkipShort(t, "end to end on tmux, 7 s on a loaded 2-core machine")
	t.Parallel()
	tmux, dir := apiNewState(t)
	s := apiStart(t, tmux, dir)
	op := s.op()
	launchAgent := func(name string) string {
		r, raw := apiMutate(t, op, "agent_launch", apiM{"agent": "custom", "command": []string{"cat"}, "name": name})
		var info tools.NodeInfo
		if json.Unmarshal(r.Result, &info) != nil || info.Terminal == "" || info.Agent != "custom" {
			t.Fatalf("agent_launch receipt %s", raw)
		}
		return info.Terminal
	}
	alpha, beta := launchAgent("alpha"), launchAgent("beta")
	plain := apiLaunch(t, op, "cat")
	sa, sb := s.session(alpha), s.session(beta)

	var rep struct{ Node, State, Message string }
	apiOK(t, sa, "agent_report", apiM{"state": "working", "message": "compiling"}, &rep)
	if rep.Node != alpha || rep.State != "working" {
		t.Fatalf("agent_report %+v", rep)
	}
	apiOK(t, sb, "agent_report", apiM{"state": "idle"}, nil)
	apiFail(t, op, "agent_report", apiM{"state": "idle"}, tools.KindUsage)
	apiFail(t, sa, "agent_report", apiM{"state": "sleeping"}, tools.KindUsage)
	var status struct {
		Agents []struct{ Node, State, Message, Agent, Status string }
	}
	apiOK(t, sb, "agent_status", nil, &status)
	got := map[string]string{}
	for _, ag := range status.Agents {
		got[ag.Node] = ag.State + "/" + ag.Message
	}
	if len(status.Agents) != 2 || got[alpha] != "working/compiling" || got[beta] != "idle/" {
		t.Fatalf("agent_status %+v (plain node %s must not be listed)", status, plain)
	}

	// alpha may not drive beta: no task until beta opts in.
	args := apiM{"node": beta, "text": "please-review-42", "message_id": "m1"}
	apiFail(t, sa, "agent_send", args, tools.KindForbidden)
	if screen := apiScreen(t, op, beta); strings.Contains(screen, "please-review-42") {
		t.Fatalf("a refused agent_send typed into beta:\n%s", screen)
	}
	var rep2 tools.AgentReport
	apiOK(t, sb, "agent_report", apiM{"state": "idle", "accepts_tasks": true}, &rep2)
	if !rep2.AcceptsTasks {
		t.Fatalf("agent_report %+v", rep2)
	}
	// alpha sends beta a task; only beta may reply.
	r, raw := apiMutate(t, sa, "agent_send", args)
	var sent struct {
		Task      string `json:"task"`
		Duplicate bool   `json:"duplicate"`
	}
	if json.Unmarshal(r.Result, &sent) != nil || sent.Task == "" {
		t.Fatalf("agent_send receipt %s", raw)
	}
	apiWaitScreen(t, op, beta, "please-review-42")
	var tk tools.Task
	apiOK(t, sb, "agent_task", apiM{"task": sent.Task}, &tk)
	if tk.From != alpha || tk.To != beta || tk.State != "pending" || tk.Text != "please-review-42" {
		t.Fatalf("agent_task %+v", tk)
	}
	apiFail(t, sa, "agent_reply", apiM{"task": sent.Task, "text": "self-approved", "state": "completed"}, tools.KindForbidden)
	apiFail(t, op, "agent_reply", apiM{"task": sent.Task, "text": "by operator", "state": "completed"}, tools.KindForbidden)
	apiMutate(t, sb, "agent_reply", apiM{"task": sent.Task, "text": "looks good", "state": "completed"})
	apiOK(t, sa, "agent_task", apiM{"task": sent.Task}, &tk)
	if tk.State != "completed" || tk.Reply != "looks good" || tk.Replied.IsZero() {
		t.Fatalf("agent_task after reply %+v", tk)
	}
	apiFail(t, sb, "agent_reply", apiM{"task": sent.Task, "text": "again", "state": "failed"}, tools.KindConflict)
	apiFail(t, sa, "agent_task", apiM{"task": "task-999"}, tools.KindNotFound)

	// The same message_id is a duplicate: the text is not submitted again.
	r, raw = apiMutate(t, sa, "agent_send", args)
	var dup struct {
		Task      string `json:"task"`
		Duplicate bool   `json:"duplicate"`
	}
	if json.Unmarshal(r.Result, &dup) != nil || dup.Task != sent.Task || !dup.Duplicate {
		t.Fatalf("repeated agent_send %s", raw)
	}
	apiQuiet(t, op, beta)
	if scr := apiScreen(t, op, beta); strings.Count(scr, "please-review-42") != 2 { // tty echo + cat's copy
		t.Fatalf("task text shown %d times, want 2 (echo and cat):\n%s", strings.Count(scr, "please-review-42"), scr)
	}
}

func bashArgv() []string {
	return []string{"bash", "--norc", "--noprofile", "-i"}
}
