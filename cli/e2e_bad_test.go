package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/tools"
)

// TestE2EBadInputs drives the real binaries with the bad inputs of the
// contract: each gets a clear error and the right exit code, and a
// tampered endpoint never receives the token.
func TestE2EBadInputs(t *testing.T) {
	t.Parallel()
	e := newE2E(t)
	up, _ := e.up()
	id := e.launchShell()

	expectExit := func(want int, wantText string, bin string, args ...string) {
		t.Helper()
		code, out, errb := e.run(bin, args...)
		if code != want || !strings.Contains(out+errb, wantText) {
			t.Fatalf("%s %v: exit %d (want %d), output lacks %q:\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), args, code, want, wantText, out, errb)
		}
	}
	// No session at all: the exact message, exit 2. (The state dir of e.env
	// has an operator session, which termsprawlctl uses by default outside
	// nodes since CONTRACT §10: look at an empty state dir instead.)
	withEnv := e.env
	e.env = append(append([]string(nil), e.env...), "TERMSPRAWL_HOME="+t.TempDir())
	expectExit(ExitUsage, "Launch this helper from a termsprawl agent, or provide --session /absolute/path/to/session.json", e.ctl, "call", "session_info")
	e.env = withEnv
	// Usage errors are found before any I/O: exit 2.
	expectExit(ExitUsage, `unknown operation "bogus"`, e.ctl, "--session", e.oper, "call", "bogus")
	expectExit(ExitUsage, "", e.ctl, "--session", e.oper, "call", "terminal_list", "{not json")
	expectExit(ExitUsage, "nope", e.ctl, "--session", e.oper, "call", "terminal_type", `{"terminal":"`+id+`","text":"x","nope":1}`)
	expectExit(ExitUsage, "terminal", e.ctl, "--session", e.oper, "call", "terminal_type", `{"text":"x"}`)
	expectExit(ExitUsage, "", e.ctl, "--session", e.oper, "call", "terminal_resize", `{"terminal":"`+id+`","columns":"80","rows":24}`)
	expectExit(ExitUsage, "", e.ctl, "--session", e.oper, "call", "terminal_type", `{"terminal":"`+id+`","text":"a\u0000b"}`)
	expectExit(ExitUsage, "", e.ctl, "--session", e.oper, "call", "terminal_resize", `{"terminal":"`+id+`","columns":0,"rows":0}`)
	expectExit(ExitUsage, "", e.ctl, "--session", e.oper, "call", "terminal_launch", `{"columns":20000,"rows":20000}`)

	// A broken session file: unavailable, exit 1.
	bad := filepath.Join(t.TempDir(), "sessions", "x.json")
	os.MkdirAll(filepath.Dir(bad), 0o700)
	for _, content := range []string{"not json", `{"node":"x","token":"short","role":"agent"}`} {
		os.WriteFile(bad, []byte(content), 0o600)
		expectExit(ExitNo, "Tool connection unavailable", e.ctl, "--session", bad, "call", "session_info")
	}
	expectExit(ExitNo, "Tool connection unavailable", e.ctl, "--session", filepath.Join(t.TempDir(), "missing.json"), "call", "session_info")

	// Another node's token cannot drive the operator's terminal.
	agent := tools.SessionPath(e.state, e.launchShell())
	expectExit(ExitNo, `"forbidden"`, e.ctl, "--session", agent, "call", "terminal_type", `{"terminal":"`+id+`","text":"x"}`)

	// A tampered endpoint.json: the token never reaches the listener.
	var mu sync.Mutex
	var seen []string
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.String()+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		http.Redirect(w, r, "http://127.0.0.1:1/call", http.StatusTemporaryRedirect)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	epPath := tools.EndpointPath(e.state)
	orig, err := tools.ReadEndpoint(epPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{
		"http://localhost:" + strconv.Itoa(port) + "/call",
		"https://127.0.0.1:" + strconv.Itoa(port) + "/call",
		"http://127.0.0.1:" + strconv.Itoa(port) + "/other",
		"http://127.0.0.2:" + strconv.Itoa(port) + "/call",
	} {
		ep := orig
		ep.URL = u
		if err := tools.WriteEndpoint(epPath, ep); err != nil {
			t.Fatal(err)
		}
		// No valid orchestrator answers: "not running" (CONTRACT §10).
		expectExit(ExitNotRunning, "Invalid local endpoint", e.ctl, "--session", e.oper, "call", "session_info")
	}
	// A valid-looking endpoint that redirects: refused, token not forwarded.
	ep := orig
	ep.URL = "http://127.0.0.1:" + strconv.Itoa(port) + "/call"
	tools.WriteEndpoint(epPath, ep)
	expectExit(ExitNo, "Tool connection unavailable", e.ctl, "--session", e.oper, "call", "session_info")
	mu.Lock()
	if len(seen) != 1 {
		t.Fatalf("the recording listener saw %d requests, want exactly the one to a valid endpoint: %q", len(seen), seen)
	}
	mu.Unlock()
	tools.WriteEndpoint(epPath, orig)

	// A second `termsprawl up` on the same state dir is refused.
	code, out, errb := e.run(e.ts, "up")
	if code == 0 || !strings.Contains(out+errb, "another termsprawl") {
		t.Fatalf("second up: exit %d\n%s%s", code, out, errb)
	}
	var env map[string]any
	json.Unmarshal([]byte(e.must(e.ctl, "--session", e.oper, "call", "session_info")), &env)
	if env["ok"] != true {
		t.Fatalf("the first orchestrator stopped serving: %v", env)
	}
	e.down(up)
}
