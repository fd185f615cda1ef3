package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

func call(t *testing.T, session, op, args string, opts CallOptions) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return Call(ctx, session, Request{Operation: op, Args: json.RawMessage(args)}, opts)
}

func wantUnavailable(t *testing.T, res Result, reason string) {
	t.Helper()
	if res.OK || res.Kind != KindUnavailable {
		t.Fatalf("want unavailable, got %+v", res)
	}
	if !strings.HasPrefix(res.Error, "Tool connection unavailable: ") ||
		!strings.HasSuffix(res.Error, ". Check that termsprawl is running. Mutations are not automatically retried.") ||
		!strings.Contains(res.Error, reason) {
		t.Fatalf("error %q lacks %q", res.Error, reason)
	}
	if strings.Contains(res.Error, testToken) {
		t.Fatal("token leaked into the error")
	}
}

// startRecorder listens on addr and records every byte sent to it.
func startRecorder(t *testing.T, addr string) (*recorder, string) {
	t.Helper()
	l, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	t.Cleanup(func() { l.Close() })
	rec := &recorder{}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(2 * time.Second))
				rec.mu.Lock()
				rec.conns++
				rec.mu.Unlock()
				b, _ := io.ReadAll(bufio.NewReader(c))
				rec.mu.Lock()
				rec.data.Write(b)
				rec.mu.Unlock()
			}()
		}
	}()
	return rec, l.Addr().String()
}

func TestCallTokenNeverLeavesForInvalidEndpoints(t *testing.T) {
	st := newTestState(t)
	rec1, addr1 := startRecorder(t, "127.0.0.1:0")
	_, port1, _ := net.SplitHostPort(addr1)
	urls := []string{
		"https://" + addr1 + "/call",
		"http://localhost:" + port1 + "/call",
		"http://" + addr1 + "/other",
		"http://" + addr1 + "/call?x=1",
		"http://u:p@" + addr1 + "/call",
		"http://[::1]:" + port1 + "/call",
	}
	rec2, addr2 := startRecorder(t, "127.0.0.2:0")
	urls = append(urls, "http://"+addr2+"/call")
	for _, u := range urls {
		st.writeEndpoint(t, u, "i1")
		res := call(t, st.session, "terminal_list", "{}", CallOptions{})
		wantUnavailable(t, res, "Invalid local endpoint: ")
	}
	// A barrier: our own connection to each listener, accepted after any
	// the refused calls made (the accept queue is in order), is counted
	// once its data is read.
	for _, a := range []string{addr1, addr2} {
		c, err := net.Dial("tcp4", a)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte("barrier"))
		c.Close()
	}
	for _, rec := range []*recorder{rec1, rec2} {
		testenv.Eventually(t, 10*time.Second, func() bool {
			rec.mu.Lock()
			defer rec.mu.Unlock()
			return strings.Contains(rec.data.String(), "barrier")
		}, testenv.Msg("the barrier connection was not read"))
		rec.mu.Lock()
		if rec.conns != 1 || strings.Contains(rec.data.String(), testToken) {
			t.Errorf("a listener was contacted: %d conns, %q", rec.conns, rec.data.String())
		}
		rec.mu.Unlock()
	}
}

func TestCallRefusesRedirects(t *testing.T) {
	st := newTestState(t)
	var targetHits atomic.Int32
	var targetSawToken atomic.Bool
	target := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		targetHits.Add(1)
		if strings.Contains(r.Header.Get("Authorization"), testToken) {
			targetSawToken.Store(true)
		}
		fmt.Fprint(w, `{"ok":true,"value":"stolen"}`)
	})
	for _, code := range []int{301, 302, 307, 308} {
		redirector := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, target.URL+"/call", code)
		})
		st.writeEndpoint(t, redirector.URL+"/call", "i1")
		res := call(t, st.session, "terminal_list", "{}", CallOptions{})
		wantUnavailable(t, res, "refusing to follow it")
		// Also with a caller-supplied client that would follow redirects.
		res = call(t, st.session, "terminal_list", "{}", CallOptions{HTTPClient: &http.Client{}})
		wantUnavailable(t, res, "refusing to follow it")
	}
	if targetHits.Load() != 0 || targetSawToken.Load() {
		t.Fatalf("redirect target contacted %d times (token seen: %v)", targetHits.Load(), targetSawToken.Load())
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func TestCallUnavailable(t *testing.T) {
	st := newTestState(t)

	// No endpoint file.
	res := call(t, st.session, "terminal_list", "{}", CallOptions{})
	wantUnavailable(t, res, "read endpoint file")

	// Connection refused: the exact text.
	addr := freePort(t)
	st.writeEndpoint(t, "http://"+addr+"/call", "i1")
	res = call(t, st.session, "terminal_list", "{}", CallOptions{})
	want := "Tool connection unavailable: connection to http://" + addr + "/call refused. Check that termsprawl is running. Mutations are not automatically retried."
	if res.OK || res.Kind != KindUnavailable || res.Error != want {
		t.Fatalf("got  %q\nwant %q", res.Error, want)
	}
	out, _ := json.Marshal(res)
	if !strings.HasPrefix(string(out), `{"ok":false,"error":"Tool connection unavailable: connection to`) {
		t.Fatalf("%s", out)
	}

	// Non-JSON body.
	html := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>hi</html>")
	})
	st.writeEndpoint(t, html.URL+"/call", "i1")
	wantUnavailable(t, call(t, st.session, "terminal_list", "{}", CallOptions{}), "is not a tool result (HTTP 200, text/html)")

	// JSON that is not an envelope.
	notEnv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"value":1}`) })
	st.writeEndpoint(t, notEnv.URL+"/call", "i1")
	wantUnavailable(t, call(t, st.session, "terminal_list", "{}", CallOptions{}), "is not a tool result")

	// Timeout.
	slow := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // lets the server notice the client leaving
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	st.writeEndpoint(t, slow.URL+"/call", "i1")
	wantUnavailable(t, call(t, st.session, "terminal_list", "{}", CallOptions{Timeout: 50 * time.Millisecond}), "no reply from")

	// Missing, unreadable, bad session files.
	wantUnavailable(t, call(t, st.dir+"/sessions/nope.json", "terminal_list", "{}", CallOptions{}), "read session file")
	writeFile(t, st.dir+"/sessions/bad.json", `{"node":"x","token":"short","role":"agent"}`, 0o600)
	wantUnavailable(t, call(t, st.dir+"/sessions/bad.json", "terminal_list", "{}", CallOptions{}), "64 lowercase hex")

	// Bad endpoint JSON.
	writeFile(t, st.endpoint, "{", 0o600)
	wantUnavailable(t, call(t, st.session, "terminal_list", "{}", CallOptions{}), "endpoint file")
}

func TestCallValidatesBeforeIO(t *testing.T) {
	t.Parallel()
	// No session file at all: a usage error must win, with no I/O.
	for _, tc := range []struct{ op, args, want string }{
		{"nope", `{}`, "unknown operation"},
		{"terminal_type", `{"terminal":"a"}`, `missing required argument "text"`},
		{"terminal_list", `{"x":1}`, `unknown argument "x"`},
		{"terminal_list", `[`, "must be a JSON object"},
	} {
		res := call(t, "/nonexistent/sessions/x.json", tc.op, tc.args, CallOptions{})
		if res.OK || res.Kind != KindUsage || !strings.Contains(res.Error, tc.want) {
			t.Errorf("%s %s: %+v", tc.op, tc.args, res)
		}
	}
	// A request over the body cap is refused locally.
	big := strings.Repeat("a", MaxStringBytes)
	var b strings.Builder
	b.WriteString(`{"command":[`)
	for i := 0; i < 20; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"` + big + `"`)
	}
	b.WriteString(`]}`)
	res := call(t, "/nonexistent/sessions/x.json", "terminal_launch", b.String(), CallOptions{})
	if res.Kind != KindUsage || !strings.Contains(res.Error, "over the 1048576-byte limit") {
		t.Fatalf("%+v", res)
	}
}

func TestCallSuccessAndErrorEnvelopes(t *testing.T) {
	st := newTestState(t)
	var gotAuth, gotCT, gotBody atomic.Value
	srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		gotAuth.Store(r.Header.Get("Authorization"))
		gotCT.Store(r.Header.Get("Content-Type"))
		b, _ := io.ReadAll(r.Body)
		gotBody.Store(string(b))
		if strings.Contains(string(b), "terminal_close") {
			w.WriteHeader(404)
			fmt.Fprint(w, `{"ok":false,"error":"no terminal","kind":"not_found","retryable":false,"details":{"terminal":"a"}}`)
			return
		}
		fmt.Fprint(w, `{"ok":true,"value":{"n":1}}`)
	})
	st.writeEndpoint(t, srv.URL+"/call", "i1")
	res := call(t, st.session, "terminal_list", "", CallOptions{})
	if !res.OK || string(res.Value) != `{"n":1}` {
		t.Fatalf("%+v", res)
	}
	if gotAuth.Load() != "Bearer "+testToken || gotCT.Load() != "application/json" || gotBody.Load() != `{"operation":"terminal_list","args":{}}` {
		t.Fatal(gotAuth.Load(), gotCT.Load(), gotBody.Load())
	}
	res = call(t, st.session, "terminal_close", `{"terminal":"a"}`, CallOptions{})
	if res.OK || res.Kind != KindNotFound || res.Error != "no terminal" || res.Details["terminal"] != "a" {
		t.Fatalf("%+v", res)
	}
}

func TestCallWaitsForEndpoint(t *testing.T) {
	b := newFakeBackend()
	srv, url := startHandler(t, b)
	_ = srv

	t.Run("endpoint appears later", func(t *testing.T) {
		st := newTestState(t)
		go func() {
			time.Sleep(100 * time.Millisecond)
			_ = WriteEndpoint(st.endpoint, Endpoint{URL: url, InstanceID: "new"})
		}()
		res := call(t, st.session, "terminal_list", "{}", CallOptions{Wait: 5 * time.Second})
		if !res.OK {
			t.Fatalf("%+v", res)
		}
	})

	t.Run("stale endpoint refused, then a fresh one", func(t *testing.T) {
		st := newTestState(t)
		st.writeEndpoint(t, "http://"+freePort(t)+"/call", "old")
		go func() {
			time.Sleep(100 * time.Millisecond)
			_ = WriteEndpoint(st.endpoint, Endpoint{URL: url, InstanceID: "new"})
		}()
		// A mutation without a key may wait too: refused means nothing was sent.
		res := call(t, st.session, "terminal_type", `{"terminal":"a","text":"x"}`, CallOptions{Wait: 5 * time.Second})
		if !res.OK {
			t.Fatalf("%+v", res)
		}
	})

	t.Run("gives up after Wait", func(t *testing.T) {
		st := newTestState(t)
		res := call(t, st.session, "terminal_list", "{}", CallOptions{Wait: 100 * time.Millisecond})
		wantUnavailable(t, res, "waited 100ms for termsprawl to start")
	})
}

func TestCallRetry(t *testing.T) {
	st := newTestState(t)
	var hits atomic.Int32
	srv := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		if n%3 != 0 {
			w.WriteHeader(202)
			fmt.Fprint(w, `{"ok":false,"error":"sent, outcome unknown","kind":"in_progress","retryable":true}`)
			return
		}
		fmt.Fprint(w, `{"ok":true,"value":"done"}`)
	})
	st.writeEndpoint(t, srv.URL+"/call", "i1")

	// A mutation without a key is never repeated.
	hits.Store(0)
	res := call(t, st.session, "terminal_type", `{"terminal":"a","text":"x"}`, CallOptions{Retry: 5})
	if res.OK || res.Kind != KindInProgress || hits.Load() != 1 {
		t.Fatalf("%+v after %d calls", res, hits.Load())
	}
	// With a key it is, up to Retry times.
	hits.Store(0)
	res = call(t, st.session, "terminal_type", `{"terminal":"a","text":"x","idempotency_key":"k"}`, CallOptions{Retry: 5})
	if !res.OK || hits.Load() != 3 {
		t.Fatalf("%+v after %d calls", res, hits.Load())
	}
	hits.Store(0)
	res = call(t, st.session, "terminal_type", `{"terminal":"a","text":"x","idempotency_key":"k"}`, CallOptions{Retry: 1})
	if res.OK || hits.Load() != 2 {
		t.Fatalf("%+v after %d calls", res, hits.Load())
	}
	// Retry 0: one call.
	hits.Store(0)
	_ = call(t, st.session, "terminal_type", `{"terminal":"a","text":"x","idempotency_key":"k"}`, CallOptions{})
	if hits.Load() != 1 {
		t.Fatal(hits.Load())
	}
	// Non-read-only operations without receipts are not repeated either.
	hits.Store(0)
	_ = call(t, st.session, "dialog_request", `{"kind":"permission","title":"t"}`, CallOptions{Retry: 5})
	if hits.Load() != 1 {
		t.Fatal(hits.Load())
	}
}

func TestCallConcurrentThroughHandler(t *testing.T) {
	st := newTestState(t)
	l, err := ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	b := newFakeBackend()
	hs := NewHTTPServer(NewHandler(b, func() string { return l.Addr().String() }))
	go func() { _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close() })
	st.writeEndpoint(t, EndpointURL(l.Addr().String()), "i1")

	var wg sync.WaitGroup
	var failures atomic.Int32
	var firstErr atomic.Value
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				res := Call(context.Background(), st.session, Request{Operation: "terminal_type",
					Args: json.RawMessage(fmt.Sprintf(`{"terminal":"t%d","text":"%d"}`, g, i))}, CallOptions{})
				var v struct {
					Node string         `json:"node"`
					Args map[string]any `json:"args"`
				}
				if !res.OK || json.Unmarshal(res.Value, &v) != nil || v.Node != "node1" || v.Args["text"] != fmt.Sprint(i) {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%+v", res))
				}
			}
		}(g)
	}
	wg.Wait()
	if failures.Load() != 0 {
		t.Fatalf("%d of 500 calls failed, first: %v", failures.Load(), firstErr.Load())
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.calls != 500 {
		t.Fatalf("backend saw %d calls", b.calls)
	}
}
