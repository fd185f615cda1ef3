package monitor

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/orchestrator/render"
	"github.com/termsprawl/termsprawl/tools"
)

// fakeEngine is an Engine of nodes whose grids the test sets.
type fakeEngine struct {
	mu    sync.Mutex
	nodes map[string]*fakeNode
	order []string
	info  map[string]func(*tools.NodeInfo) // changes a node's row
}

type fakeNode struct {
	mu      sync.Mutex
	g       render.Grid
	rev     uint64
	changed chan struct{}
	closing chan struct{}
	shown   int
}

func newFakeEngine() *fakeEngine { return &fakeEngine{nodes: map[string]*fakeNode{}} }

func (e *fakeEngine) add(id string, lines ...string) *fakeNode {
	n := &fakeNode{changed: make(chan struct{}), closing: make(chan struct{})}
	n.set(lines...)
	e.mu.Lock()
	e.nodes[id] = n
	e.order = append(e.order, id)
	e.mu.Unlock()
	return n
}

func (e *fakeEngine) remove(id string) {
	e.mu.Lock()
	n := e.nodes[id]
	delete(e.nodes, id)
	for i, o := range e.order {
		if o == id {
			e.order = append(e.order[:i], e.order[i+1:]...)
			break
		}
	}
	e.mu.Unlock()
	close(n.closing)
}

// set replaces the screen with lines (unstyled, 10×3) and bumps the revision.
func (n *fakeNode) set(lines ...string) {
	g := render.NewGrid(10, 3)
	for y, l := range lines {
		for x, r := range []rune(l) {
			c := render.Cell{Content: string(r), Width: 1}
			if r == 'R' {
				c.Fg = render.ANSI(1)
			}
			g.Set(x, y, c)
		}
	}
	n.mu.Lock()
	n.g = g
	n.rev++
	close(n.changed)
	n.changed = make(chan struct{})
	n.mu.Unlock()
}

func (e *fakeEngine) Peek() []tools.NodeInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := []tools.NodeInfo{}
	for _, id := range e.order {
		n := tools.NodeInfo{Terminal: id, Status: tools.StatusRunning, Columns: 10, Rows: 3}
		if f := e.info[id]; f != nil {
			f(&n)
		}
		out = append(out, n)
	}
	return out
}

func (e *fakeEngine) Show(_ context.Context, id string) (Shown, error) {
	e.mu.Lock()
	n := e.nodes[id]
	e.mu.Unlock()
	if n == nil {
		return nil, tools.Errorf(tools.KindNotFound, "no terminal %q", id)
	}
	n.mu.Lock()
	n.shown++
	n.mu.Unlock()
	return &fakeShown{n: n}, nil
}

func (n *fakeNode) shownCount() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.shown
}

type fakeShown struct {
	n    *fakeNode
	once sync.Once
}

func (s *fakeShown) Frame() (render.Grid, []uint64) {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	return s.n.g, nil // no stamps: rows are compared by their cells
}

func (s *fakeShown) Changed() (uint64, <-chan struct{}) {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	return s.n.rev, s.n.changed
}

func (s *fakeShown) Closing() <-chan struct{} { return s.n.closing }

func (s *fakeShown) Close() {
	s.once.Do(func() {
		s.n.mu.Lock()
		s.n.shown--
		s.n.mu.Unlock()
	})
}

// fakeSide has a pending permission, a question and a watch.
type fakeSide struct{}

func (fakeSide) MonitorSide() SideState {
	return SideState{
		Agents: map[string]AgentState{"a": {State: "working", Message: "tests"}},
		Dialogs: []tools.Dialog{{ID: "dialog-1", Node: "a", Kind: "permission", Title: "Run rm?"},
			{ID: "dialog-2", Node: "a", Kind: "question", Title: "Which database?", Options: []string{"staging", "prod's copy"}},
			{ID: "dialog-3", Node: "a", Kind: "permission", Title: `<img src=x onerror="document.title='owned'">`}},
		Watches: []Watch{{ID: "watch-1", Terminal: "a", Owner: "operator", What: "text \"ok\""}},
	}
}

// serveMonitor serves a Monitor over the fake on a real loopback listener.
func serveMonitor(t *testing.T, e *fakeEngine) (*Monitor, string) {
	t.Helper()
	dir := t.TempDir()
	saved, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tools.ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	hostPort := ln.Addr().String()
	m, err := New(Config{Saved: saved, Engine: e, Side: fakeSide{}, HostPort: func() string { return hostPort }, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	callHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot) // stands for the /call handler
	})
	srv := tools.NewHTTPServer(m.Mount(callHandler))
	go srv.Serve(ln)
	t.Cleanup(func() {
		m.Close()
		srv.Close()
	})
	return m, hostPort
}

func get(t *testing.T, url string, mod func(*http.Request)) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(req)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestMonitorRefusals(t *testing.T) {
	t.Parallel()
	e := newFakeEngine()
	e.add("a", "hello")
	m, hostPort := serveMonitor(t, e)
	url := m.URL()
	if !strings.HasPrefix(url, "http://"+hostPort+"/monitor/") || len(url) != len("http://"+hostPort+"/monitor/")+32+1 {
		t.Fatalf("URL %q", url)
	}
	resp, body := get(t, url, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "<title>termsprawl monitor</title>") {
		t.Fatalf("the page: %d %q", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || strings.Contains(csp, "unsafe") {
		t.Fatalf("CSP %q", csp)
	}
	base := "http://" + hostPort
	capability := strings.TrimSuffix(strings.TrimPrefix(url, base+"/monitor/"), "/")
	wrong := []byte(capability)
	wrong[0] ^= 1
	for _, tc := range []struct {
		name   string
		url    string
		mod    func(*http.Request)
		status int
		says   string
	}{
		{"wrong capability", base + "/monitor/" + string(wrong) + "/", nil, 404, "no such page"},
		{"wrong capability, events", base + "/monitor/" + string(wrong) + "/events", nil, 404, "no such page"},
		{"short capability", base + "/monitor/" + capability[:31] + "/", nil, 404, "no such page"},
		{"no capability", base + "/monitor/", nil, 404, "no such page"},
		{"no slash", base + "/monitor", nil, 404, "no such page"},
		{"other path under the capability", url + "secret.txt", nil, 404, "no such page"},
		{"path traversal", url + "../../call", nil, 404, ""},
		{"query on an asset", url + "app.js?x=1", nil, 404, "no such page"},
		{"unknown event parameter", url + "events?since=1", nil, 400, "unknown parameter"},
		{"bad node id", url + "events?show=..%2Fx", nil, 400, "not a node id"},
		{"foreign Origin", url, func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, 403, "Origin"},
		{"foreign Origin on events", url + "events", func(r *http.Request) { r.Header.Set("Origin", "http://localhost:1") }, 403, "Origin"},
		{"null Origin", url, func(r *http.Request) { r.Header.Set("Origin", "null") }, 403, "Origin"},
		{"foreign Host", url, func(r *http.Request) { r.Host = "evil.example" }, 403, "Host"},
		{"localhost Host", url, func(r *http.Request) { r.Host = strings.Replace(hostPort, "127.0.0.1", "localhost", 1) }, 403, "Host"},
		{"cross-site fetch", url, func(r *http.Request) { r.Header.Set("Sec-Fetch-Site", "cross-site") }, 403, "cross-site"},
		{"POST", url, func(r *http.Request) { r.Method = http.MethodPost }, 405, "read-only"},
		{"PUT on events", url + "events", func(r *http.Request) { r.Method = http.MethodPut }, 405, "read-only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, tc.url, tc.mod)
			if resp.StatusCode != tc.status || !strings.Contains(body, tc.says) {
				t.Fatalf("%s: %d %q, want %d containing %q", tc.url, resp.StatusCode, body, tc.status, tc.says)
			}
		})
	}
	// Its own Origin is fine; other paths go to the next handler (/call).
	if resp, _ := get(t, url, func(r *http.Request) { r.Header.Set("Origin", base) }); resp.StatusCode != 200 {
		t.Fatalf("own Origin: %d", resp.StatusCode)
	}
	if resp, _ := get(t, base+"/call", nil); resp.StatusCode != http.StatusTeapot {
		t.Fatalf("/call was not passed on: %d", resp.StatusCode)
	}
	if resp, _ := get(t, url+"app.js", nil); resp.Header.Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Fatalf("app.js type %q", resp.Header.Get("Content-Type"))
	}
}

// sse reads one event stream.
type sse struct {
	resp *http.Response
	sc   *bufio.Scanner
}

func openSSE(t *testing.T, url string) *sse {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &sse{resp: resp, sc: sc}
}

// next returns the next event's name and data.
func (s *sse) next(t *testing.T) (string, json.RawMessage) {
	t.Helper()
	name := ""
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "data: ") && name != "":
			return name, json.RawMessage(line[len("data: "):])
		}
	}
	t.Fatalf("stream ended: %v", s.sc.Err())
	return "", nil
}

func (s *sse) nextOf(t *testing.T, want string) json.RawMessage {
	t.Helper()
	for {
		if name, data := s.next(t); name == want {
			return data
		}
	}
}

func rowText(t *testing.T, raw json.RawMessage) (int, string) {
	t.Helper()
	var l lineMsg
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, r := range l.R {
		b.WriteString(r.T)
	}
	return l.Y, strings.TrimRight(b.String(), " ")
}

// TestMonitorStream: a full frame on connect, then only the changed rows
// per revision; nodes appear and go in state events; the shown node is
// observed exactly while a page shows it.
func TestMonitorStream(t *testing.T) {
	t.Parallel()
	e := newFakeEngine()
	a := e.add("a", "one", "two R", "three")
	m, _ := serveMonitor(t, e)
	s := openSSE(t, m.URL()+"events?show=a")
	var f struct {
		Show   string          `json:"show"`
		Screen screenMsg       `json:"screen"`
		State  json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(s.nextOf(t, "frame"), &f); err != nil {
		t.Fatal(err)
	}
	if f.Show != "a" || !f.Screen.Full || len(f.Screen.Lines) != 3 {
		t.Fatalf("frame %+v", f)
	}
	for i, want := range []string{"one", "two R", "three"} {
		if y, got := rowText(t, f.Screen.Lines[i]); y != i || got != want {
			t.Fatalf("row %d = %d %q, want %q", i, y, got, want)
		}
	}
	if !strings.Contains(string(f.Screen.Lines[1]), `"f":"#cd3131"`) {
		t.Fatalf("red cell not resolved with the screenshot palette: %s", f.Screen.Lines[1])
	}
	if !strings.Contains(string(f.State), `termsprawl answer dialog-1 allow`) || !strings.Contains(string(f.State), `"watch":"watch-1"`) {
		t.Fatalf("state lacks the dialog's answer or the watch: %s", f.State)
	}
	if n := a.shownCount(); n != 1 {
		t.Fatalf("shown %d times while one page shows it", n)
	}

	a.set("one", "TWO", "three")
	var sc screenMsg
	if err := json.Unmarshal(s.nextOf(t, "screen"), &sc); err != nil {
		t.Fatal(err)
	}
	if sc.Full || len(sc.Lines) != 1 {
		t.Fatalf("changed rows: %+v, want only row 1", sc)
	}
	if y, got := rowText(t, sc.Lines[0]); y != 1 || got != "TWO" {
		t.Fatalf("changed row %d %q", y, got)
	}

	e.add("b", "bee")
	for {
		var st stateMsg
		if err := json.Unmarshal(s.nextOf(t, "state"), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Nodes) == 2 && st.Nodes[1].Terminal == "b" {
			break
		}
	}
	e.remove("b")
	for {
		var st stateMsg
		if err := json.Unmarshal(s.nextOf(t, "state"), &st); err != nil {
			t.Fatal(err)
		}
		if len(st.Nodes) == 1 {
			break
		}
	}

	// The page leaves: the node is no longer shown.
	s.resp.Body.Close()
	if !testenv.Until(10*time.Second, func() bool { return !(a.shownCount() != 0) }) {
		t.Fatal("the node stays shown after the page left")
	}
	m.hub.mu.Lock()
	polling, watchers := m.hub.polling != nil, len(m.hub.watchers)
	m.hub.mu.Unlock()
	if polling || watchers != 0 {
		t.Fatalf("after the last page left: polling %v, %d watchers", polling, watchers)
	}
}

// TestCapabilityPersists: the capability survives a restart (same state
// dir), is mode 0600, and an unusable file is replaced.
func TestCapabilityPersists(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := SavePort(dir, a, 4242); err != nil {
		t.Fatal(err)
	}
	b, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b.Capability != a.Capability || b.Port != 4242 || !validCapability(a.Capability) {
		t.Fatalf("first %+v, second %+v", a, b)
	}
	fi, err := os.Stat(Path(dir))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("monitor.json: %v %v", fi.Mode(), err)
	}
	if err := os.WriteFile(Path(dir), []byte(`{"capability":"short"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil || !validCapability(c.Capability) || c.Capability == a.Capability {
		t.Fatalf("after a bad file: %+v %v", c, err)
	}
	other, _ := Load(t.TempDir())
	if other.Capability == c.Capability {
		t.Fatal("two state dirs got the same capability")
	}
}
