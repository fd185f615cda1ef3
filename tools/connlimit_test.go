package tools

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strings"
	"testing"
	"time"
)

// startToolServer serves NewHandler(b) the way the orchestrator does:
// ListenLoopback, NewHTTPServer, Serve. It returns the listener and the
// /call URL.
func startToolServer(t *testing.T, b Backend) (*connLimitListener, string) {
	t.Helper()
	ln, err := ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	hostPort := ln.Addr().(*net.TCPAddr).AddrPort().String()
	srv := NewHTTPServer(NewHandler(b, func() string { return hostPort }))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Close()
		<-done
	})
	cl, ok := ln.(*connLimitListener)
	if !ok {
		t.Fatalf("ListenLoopback returned %T", ln)
	}
	return cl, EndpointURL(hostPort)
}

// rawRequest sends one raw HTTP/1.1 request on c and reads the response.
func rawRequest(t *testing.T, c net.Conn, br *bufio.Reader, method, host, token string, body string, extra ...string) *http.Response {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%s /call HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, host, len(body))
	if token != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", token)
	}
	for _, h := range extra {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n" + body)
	_ = c.SetDeadline(time.Now().Add(hangBound))
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("not an envelope: %q", data)
	}
	return resp
}

// wantClosedByServer fails unless the server closes c (EOF or reset)
// within hangBound.
func wantClosedByServer(t *testing.T, c net.Conn, br *bufio.Reader, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(hangBound))
	_, err := br.ReadByte()
	var ne net.Error
	switch {
	case err == nil:
		t.Fatalf("%s: the server sent more data", what)
	case errors.As(err, &ne) && ne.Timeout():
		t.Fatalf("%s: the connection is still open after %s", what, hangBound)
	}
}

func TestUnauthenticatedRepliesCloseTheConnection(t *testing.T) {
	t.Parallel()
	_, u := startToolServer(t, newFakeBackend())
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/call")
	list := `{"operation":"terminal_list","args":{}}`
	for _, tc := range []struct {
		name, host, token string
		extra             []string
		status            int
	}{
		{name: "no token", host: host, status: 401},
		{name: "unknown token", host: host, token: strings.Repeat("f", 64), status: 401},
		{name: "Origin", host: host, token: testToken, extra: []string{"Origin: http://evil.example"}, status: 403},
		{name: "foreign Host", host: "evil.example", token: testToken, status: 403},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp4", host)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			resp := rawRequest(t, c, br, "POST", tc.host, tc.token, list, tc.extra...)
			if resp.StatusCode != tc.status || !resp.Close { // Close: "Connection: close" was sent
				t.Fatalf("status %d, close %v", resp.StatusCode, resp.Close)
			}
			wantClosedByServer(t, c, br, "after a "+resp.Status)
		})
	}

	// An authenticated connection stays open for the next call, also after
	// a usage error.
	c, err := net.Dial("tcp4", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i, body := range []string{list, `{"operation":"nope"}`, list} {
		resp := rawRequest(t, c, br, "POST", host, testToken, body)
		if resp.Close {
			t.Fatalf("request %d: the server closes an authenticated connection (%s)", i, resp.Status)
		}
	}
}

// openFDs counts this process's open descriptors (-1 without /proc).
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func TestServerConnectionCapLetsARealCallIn(t *testing.T) {
	const idle = 3000
	// Room for the client ends and the capped server ends; ideally also
	// for a server without the cap, so that one fails the checks below
	// rather than the dials.
	raiseNoFile(t, 2*idle+1024, idle+MaxConnections+256)
	ln, u := startToolServer(t, newFakeBackend())
	st := newTestState(t)
	st.writeEndpoint(t, u, "i1")
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/call")

	// An authenticated keep-alive connection from before the flood.
	tr := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	opts := CallOptions{HTTPClient: &http.Client{Transport: tr}, Timeout: hangBound}
	if res := call(t, st.session, "terminal_list", "{}", opts); !res.OK {
		t.Fatalf("first call: %+v", res)
	}

	base := openFDs()
	conns := make([]net.Conn, 0, idle)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < idle; i++ {
		c, err := net.Dial("tcp4", host)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		conns = append(conns, c)
	}

	// The real call gets in promptly, on the kept authenticated connection.
	reused := false
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) { reused = info.Reused }}
	ctx, cancel := context.WithTimeout(httptrace.WithClientTrace(context.Background(), trace), hangBound)
	defer cancel()
	res := Call(ctx, st.session, Request{Operation: "terminal_list", Args: json.RawMessage("{}")}, opts)
	if !res.OK {
		t.Fatalf("call behind %d idle connections: %+v", idle, res)
	}
	if !reused {
		t.Error("the authenticated keep-alive connection was closed to make room")
	}
	// And so does one on a new connection: it was queued behind the idle
	// ones, so by now the server has accepted all of them.
	if res := call(t, st.session, "terminal_list", "{}", CallOptions{Timeout: hangBound}); !res.OK {
		t.Fatalf("call on a new connection: %+v", res)
	}

	if n := ln.count(); n > MaxConnections {
		t.Fatalf("the server holds %d connections, over MaxConnections (%d)", n, MaxConnections)
	}
	if base >= 0 {
		// Our idle client ends, plus at most MaxConnections server ends
		// (and a few for the calls).
		if n, limit := openFDs()-base, idle+MaxConnections+16; n > limit {
			t.Fatalf("%d descriptors opened for %d idle connections: the server holds about %d, over the cap of %d", n, idle, n-idle, MaxConnections)
		}
	}
	// The oldest idle connection was closed to make room.
	br := bufio.NewReader(conns[0])
	wantClosedByServer(t, conns[0], br, "the oldest idle connection")
}

// acceptResult is one Accept of a test listener.
type acceptResult struct {
	c   *serverConn
	err error
}

func TestConnLimitListenerPolicy(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimitListener(inner, 3)
	defer l.Close()
	accepted := make(chan acceptResult, 8)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				accepted <- acceptResult{err: err}
				return
			}
			accepted <- acceptResult{c: c.(*serverConn)}
		}
	}()
	var clients []net.Conn
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp4", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
		return c
	}
	next := func() *serverConn {
		t.Helper()
		select {
		case r := <-accepted:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.c
		case <-time.After(hangBound):
			t.Fatal("Accept did not return")
			return nil
		}
	}
	closedByServer := func(c net.Conn, what string) {
		t.Helper()
		wantClosedByServer(t, c, bufio.NewReader(c), what)
	}

	ca, cb, cc := dial(), dial(), dial()
	a, b, c := next(), next(), next()
	_ = ca
	b.authenticated.Store(true)
	if l.count() != 3 {
		t.Fatalf("count %d", l.count())
	}

	// At the cap: the oldest unauthenticated connection (a) makes room.
	cd := dial()
	d := next()
	closedByServer(ca, "a, the oldest unauthenticated")
	if l.count() != 3 {
		t.Fatalf("count %d after eviction", l.count())
	}
	_ = cb

	// All authenticated: the oldest idle one (d; b and c are busy) goes.
	c.authenticated.Store(true)
	d.authenticated.Store(true)
	d.idle.Store(true)
	ce := dial()
	e := next()
	closedByServer(cd, "d, the oldest idle authenticated")
	e.authenticated.Store(true)

	// All authenticated and busy: the new connection is refused, and the
	// next one gets in once a slot is idle.
	cf := dial()
	closedByServer(cf, "f, with every slot busy")
	c.idle.Store(true)
	dial()
	next()
	closedByServer(cc, "c, idle once f was refused")
	_ = ce

	// Closing a connection frees its slot; closing twice is harmless.
	e.Close()
	if err := e.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	if l.count() != 2 {
		t.Fatalf("count %d after close", l.count())
	}
	_ = a
}

func TestUnauthenticatedConnectionsTimeOutQuickly(t *testing.T) {
	t.Parallel()
	inner, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimitListener(inner, 8)
	l.unauthIdle = 50 * time.Millisecond
	hostPort := inner.Addr().String()
	srv := NewHTTPServer(NewHandler(newFakeBackend(), func() string { return hostPort }))
	go srv.Serve(l)
	defer srv.Close()

	// A silent connection is dropped after unauthIdle, not after the
	// read-header timeout.
	c, err := net.Dial("tcp4", hostPort)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wantClosedByServer(t, c, bufio.NewReader(c), "a silent connection")

	// The clamp itself: unauthenticated deadlines are capped, an
	// authenticated connection's are not.
	sc := &serverConn{l: l}
	far := time.Now().Add(time.Hour)
	if got := sc.clamp(far); !got.Equal(far) {
		t.Fatal("deadline capped on a connection no NewHTTPServer serves")
	}
	sc.served.Store(true)
	if got := sc.clamp(far); !got.Before(time.Now().Add(time.Second)) {
		t.Fatalf("unauthenticated deadline %v not capped", got)
	}
	if got := sc.clamp(time.Time{}); got.IsZero() {
		t.Fatal("unauthenticated zero deadline not capped")
	}
	near := time.Now().Add(time.Millisecond)
	if got := sc.clamp(near); !got.Equal(near) {
		t.Fatal("an earlier deadline was moved")
	}
	sc.authenticated.Store(true)
	if got := sc.clamp(far); !got.Equal(far) {
		t.Fatal("authenticated deadline capped")
	}
	if UnauthenticatedIdleTimeout < serverReadTimeout {
		t.Fatal("UnauthenticatedIdleTimeout would cut a request's body read short")
	}
}
