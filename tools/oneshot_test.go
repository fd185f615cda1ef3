package tools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The one-shot transport behaves as the pooled one on every path the
// client distinguishes: success, refused (not running), redirects, junk,
// a large (chunked) reply, a timeout and a cancelled call.
func TestOneShotTransport(t *testing.T) {
	st := newTestState(t)
	opts := CallOptions{HTTPClient: &http.Client{Transport: OneShotTransport}}

	_, url := startHandler(t, newFakeBackend())
	st.writeEndpoint(t, url, "i1")
	if res := call(t, st.session, "terminal_list", "{}", opts); !res.OK || !strings.Contains(string(res.Value), `"node":"node1"`) {
		t.Fatalf("success: %+v", res)
	}
	if res := call(t, st.session, "terminal_close", `{"terminal":"a"}`, opts); res.OK || res.Kind != KindNotFound {
		t.Fatalf("an error envelope: %+v", res)
	}

	addr := freePort(t)
	st.writeEndpoint(t, "http://"+addr+"/call", "i1")
	res := call(t, st.session, "terminal_list", "{}", opts)
	if want := "Tool connection unavailable: connection to http://" + addr + "/call refused. Check that termsprawl is running. Mutations are not automatically retried."; res.Error != want || !errors.Is(res.Err(), ErrNotRunning) {
		t.Fatalf("refused: %q (not running: %v)", res.Error, errors.Is(res.Err(), ErrNotRunning))
	}

	target := serveFunc(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"ok":true,"value":"stolen"}`) })
	redirector := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/call", http.StatusTemporaryRedirect)
	})
	st.writeEndpoint(t, redirector.URL+"/call", "i1")
	wantUnavailable(t, call(t, st.session, "terminal_list", "{}", opts), "refusing to follow it")

	html := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html>hi</html>")
	})
	st.writeEndpoint(t, html.URL+"/call", "i1")
	wantUnavailable(t, call(t, st.session, "terminal_list", "{}", opts), "is not a tool result (HTTP 200, text/html)")

	big := strings.Repeat("x", 300<<10)
	chunked := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"ok":true,"value":%q}`, big) // no Content-Length: chunked
	})
	st.writeEndpoint(t, chunked.URL+"/call", "i1")
	if res := call(t, st.session, "terminal_list", "{}", opts); !res.OK || len(res.Value) != len(big)+2 {
		t.Fatalf("a chunked reply of %d bytes: ok %v, %d bytes", len(big), res.OK, len(res.Value))
	}

	release := make(chan struct{})
	slow := serveFunc(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	st.writeEndpoint(t, slow.URL+"/call", "i1")
	wantUnavailable(t, call(t, st.session, "terminal_list", "{}", CallOptions{HTTPClient: opts.HTTPClient, Timeout: 50 * time.Millisecond}), "no reply from")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result, 1)
	go func() { done <- Call(ctx, st.session, Request{Operation: "terminal_list"}, opts) }()
	cancel()
	select {
	case res := <-done:
		wantUnavailable(t, res, "canceled")
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled call did not return")
	}
}
