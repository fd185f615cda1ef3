package tools

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

type rawReq struct {
	name    string
	method  string
	path    string
	body    io.Reader
	headers map[string]string
	host    string
	chunked bool

	wantStatus int
	wantKind   Kind
	wantErr    string
}

func TestHandlerGuards(t *testing.T) {
	t.Parallel()
	b := newFakeBackend()
	srv, url := startHandler(t, b)
	auth := map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range auth {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	body := func(s string) io.Reader { return strings.NewReader(s) }
	list := `{"operation":"terminal_list","args":{}}`
	twoMiB := `{"operation":"terminal_type","args":{"terminal":"a","text":"` + strings.Repeat("x", 2<<20) + `"}}`
	tests := []rawReq{
		{name: "ok", body: body(list), headers: auth, wantStatus: 200},
		{name: "ok without args", body: body(`{"operation":"terminal_list"}`), headers: auth, wantStatus: 200},
		{name: "ok bearer case", body: body(list), headers: with(map[string]string{"Authorization": "bearer " + testToken}), wantStatus: 200},
		{name: "origin", body: body(list), headers: with(map[string]string{"Origin": "http://evil.example"}), wantStatus: 403, wantKind: KindForbidden, wantErr: "Origin"},
		{name: "empty origin", body: body(list), headers: with(map[string]string{"Origin": ""}), wantStatus: 403, wantKind: KindForbidden},
		{name: "foreign host", body: body(list), headers: auth, host: "evil.example:80", wantStatus: 403, wantKind: KindForbidden, wantErr: "Host"},
		{name: "localhost host", body: body(list), headers: auth, host: "localhost:" + strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port), wantStatus: 403, wantKind: KindForbidden},
		{name: "other path", path: "/", body: body(list), headers: auth, wantStatus: 404, wantKind: KindNotFound},
		{name: "GET", method: "GET", headers: auth, wantStatus: 405, wantKind: KindUsage},
		{name: "no token", body: body(list), headers: map[string]string{"Content-Type": "application/json"}, wantStatus: 401, wantKind: KindUnauthorized},
		{name: "basic auth", body: body(list), headers: with(map[string]string{"Authorization": "Basic " + testToken}), wantStatus: 401, wantKind: KindUnauthorized},
		{name: "malformed token", body: body(list), headers: with(map[string]string{"Authorization": "Bearer xyz"}), wantStatus: 401, wantKind: KindUnauthorized},
		{name: "wrong token", body: body(list), headers: with(map[string]string{"Authorization": "Bearer " + strings.Repeat("f", 64)}), wantStatus: 401, wantKind: KindUnauthorized, wantErr: "unknown or revoked token"},
		{name: "text/plain", body: body(list), headers: with(map[string]string{"Content-Type": "text/plain"}), wantStatus: 415, wantKind: KindUsage},
		{name: "2 MiB body", body: body(twoMiB), headers: auth, wantStatus: 413, wantKind: KindUsage},
		{name: "2 MiB chunked body", body: body(twoMiB), headers: auth, chunked: true, wantStatus: 413, wantKind: KindUsage},
		{name: "malformed JSON", body: body(`{"operation":`), headers: auth, wantStatus: 400, wantKind: KindUsage},
		{name: "not an object", body: body(`[]`), headers: auth, wantStatus: 400, wantKind: KindUsage},
		{name: "trailing data", body: body(list + `{}`), headers: auth, wantStatus: 400, wantKind: KindUsage},
		{name: "unknown top-level field", body: body(`{"operation":"terminal_list","args":{},"x":1}`), headers: auth, wantStatus: 400, wantKind: KindUsage},
		{name: "case-folded Operation", body: body(`{"Operation":"terminal_list","args":{}}`), headers: auth, wantStatus: 400, wantKind: KindUsage,
			wantErr: `unknown key "Operation" (keys are case-sensitive: write "operation")`},
		{name: "case-folded ARGS", body: body(`{"operation":"terminal_list","ARGS":{}}`), headers: auth, wantStatus: 400, wantKind: KindUsage,
			wantErr: `unknown key "ARGS" (keys are case-sensitive: write "args")`},
		{name: "duplicate operation", body: body(`{"operation":"terminal_close","operation":"terminal_list","args":{}}`), headers: auth, wantStatus: 400, wantKind: KindUsage,
			wantErr: `request body: duplicate key "operation": a JSON object may name each key only once; send "operation" once`},
		{name: "duplicate args", body: body(`{"operation":"terminal_list","args":{},"args":{}}`), headers: auth, wantStatus: 400, wantKind: KindUsage,
			wantErr: `duplicate key "args"`},
		{name: "duplicate key inside args", body: body(`{"operation":"terminal_type","args":{"terminal":"a","text":"x","text":"rm -rf /"}}`), headers: auth, wantStatus: 400, wantKind: KindUsage,
			wantErr: `terminal_type: duplicate key "text": a JSON object may name each key only once; send "text" once`},
		{name: "duplicate key deep inside args", body: body(`{"operation":"terminal_type","args":{"terminal":"a","text":"x","wait":{"pattern":"a","pattern":"b"}}}`), headers: auth, wantStatus: 400, wantKind: KindUsage,
			wantErr: `terminal_type: duplicate key "pattern" in wait: `},
		{name: "operation not a string", body: body(`{"operation":1}`), headers: auth, wantStatus: 400, wantKind: KindUsage,
			wantErr: `"operation" must be a string`},
		{name: "unknown op", body: body(`{"operation":"rm_rf","args":{}}`), headers: auth, wantStatus: 400, wantKind: KindUsage, wantErr: "unknown operation"},
		{name: "unknown arg", body: body(`{"operation":"terminal_list","args":{"all":true}}`), headers: auth, wantStatus: 400, wantKind: KindUsage, wantErr: `unknown argument "all"`},
		{name: "bad arg", body: body(`{"operation":"terminal_resize","args":{"terminal":"a","columns":0,"rows":5}}`), headers: auth, wantStatus: 400, wantKind: KindUsage},
		{name: "backend error", body: body(`{"operation":"terminal_close","args":{"terminal":"a"}}`), headers: auth, wantStatus: 404, wantKind: KindNotFound},
		{name: "backend panic", body: body(`{"operation":"agent_status","args":{}}`), headers: auth, wantStatus: 500, wantKind: KindInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = "POST"
			}
			u := url
			if tc.path != "" {
				u = srv.URL + tc.path
			}
			if tc.chunked && tc.body != nil {
				tc.body = io.MultiReader(tc.body) // hides the length: chunked encoding
			}
			req, err := http.NewRequest(method, u, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			data, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, data)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("content type %q", ct)
			}
			var res Result
			if err := json.Unmarshal(data, &res); err != nil {
				t.Fatalf("not an envelope: %s", data)
			}
			if tc.wantKind == "" {
				if !res.OK {
					t.Fatalf("%s", data)
				}
				return
			}
			if res.OK || res.Kind != tc.wantKind || !strings.Contains(res.Error, tc.wantErr) {
				t.Fatalf("got %s", data)
			}
			if bytes.Contains(data, []byte(testToken)) {
				t.Fatal("token echoed")
			}
		})
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.calls != 5 { // ok, ok without args, ok bearer case, backend error, backend panic
		t.Fatalf("backend called %d times", b.calls)
	}
}

// TestGoErrorRepliesAreEnvelopes sends what net/http refuses before any
// handler runs and expects the JSON envelope, not its plain text.
func TestGoErrorRepliesAreEnvelopes(t *testing.T) {
	t.Parallel()
	_, u := startToolServer(t, newFakeBackend())
	host := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/call")
	bigHeader := "X-Big: " + strings.Repeat("a", 2<<20) + "\r\n"
	tests := []struct {
		name, req  string
		wantStatus int
		wantErr    string
		wantKind   Kind // usage when empty
	}{
		{name: "garbage request line", req: "garbage\r\n\r\n", wantStatus: 400, wantErr: "malformed HTTP request"},
		{name: "binary junk", req: "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03\r\n\r\n", wantStatus: 400, wantErr: "malformed HTTP request"},
		{name: "2 MB header", req: "POST /call HTTP/1.1\r\nHost: " + host + "\r\n" + bigHeader + "\r\n", wantStatus: 431, wantErr: "request headers are over the 65536-byte limit"},
		{name: "missing Host", req: "POST /call HTTP/1.1\r\nContent-Length: 0\r\n\r\n", wantStatus: 400, wantErr: "bad HTTP request: missing required Host header"},
		{name: "bad header line", req: "POST /call HTTP/1.1\r\nHost: " + host + "\r\nno colon here\r\n\r\n", wantStatus: 400, wantErr: "malformed HTTP request"},
		{name: "unknown transfer encoding", req: "POST /call HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: gzip\r\n\r\n", wantStatus: 501, wantErr: "unsupported Transfer-Encoding"},
		{name: "HTTP/2.0 request line", req: "POST /call HTTP/2.0\r\nHost: " + host + "\r\n\r\n", wantStatus: 505, wantErr: "unsupported HTTP version"},
		{name: "odd Expect", req: "POST /call HTTP/1.1\r\nHost: " + host + "\r\nExpect: tea\r\nContent-Length: 2\r\n\r\n{}", wantStatus: 417, wantErr: "unsupported Expect header"},
		{name: "OPTIONS *", req: "OPTIONS * HTTP/1.1\r\nHost: " + host + "\r\n\r\n", wantStatus: 404, wantErr: "no such endpoint", wantKind: KindNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp4", host)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(hangBound))
			// Write concurrently: the server answers a too-large header
			// before it has read all of it.
			go func() { _, _ = io.WriteString(c, tc.req) }()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %q", resp.StatusCode, tc.wantStatus, data)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q: %q", ct, data)
			}
			var env map[string]any
			if err := json.Unmarshal(data, &env); err != nil {
				t.Fatalf("not JSON: %q", data)
			}
			kind := tc.wantKind
			if kind == "" {
				kind = KindUsage
			}
			if env["ok"] != false || env["kind"] != string(kind) || env["retryable"] != false || !strings.Contains(fmt.Sprint(env["error"]), tc.wantErr) {
				t.Fatalf("envelope %s, want kind %s and %q", data, kind, tc.wantErr)
			}
			if resp.ContentLength != int64(len(data)) {
				t.Fatalf("Content-Length %d for %d bytes", resp.ContentLength, len(data))
			}
		})
	}
}

func TestJSONFixedReplyLeavesOtherWritesAlone(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"HTTP/1.1 200 OK\r\nDate: x\r\nContent-Length: 2\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\nhi",
		"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n{}\n",
		"HTTP/1.1 400 Bad Request" + errorHeadersOfGo + "something else",
		"HTTP/1.1 200 OK" + errorHeadersOfGo + "200 OK",
		"HTTP/1.1 417 Expectation Failed\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 417 Expectation Failed\r\nContent-Length: 0\r\n\r\nbody",
		"{\"ok\":true}",
		"HTTP/1.1 ",
		"",
	} {
		if q, ok := jsonFixedReply([]byte(p)); ok {
			t.Errorf("rewrote %q into %q", p, q)
		}
	}
}

func TestNewHTTPServerTimeouts(t *testing.T) {
	t.Parallel()
	s := NewHTTPServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.IdleTimeout <= 0 || s.WriteTimeout < 50e9 {
		t.Fatalf("%+v", s)
	}
}

// TestDecodeRequestDuplicates: every duplicate key is refused, those
// inside args relative to args (the handler prefixes the operation).
func TestDecodeRequestDuplicates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body, wantErr string
		argsDup       *DuplicateKeyError
	}{
		{body: `{"operation":"a","operation":"b"}`, wantErr: `request body: duplicate key "operation"`},
		{body: `{"args":{},"operation":"a","args":{}}`, wantErr: `request body: duplicate key "args"`},
		{body: `{"operation":"terminal_list","args":{"x":1,"x":2}}`, argsDup: &DuplicateKeyError{Key: "x"}},
		{body: `{"operation":"terminal_list","args":{"w":[{"x":1,"x":2}]}}`, argsDup: &DuplicateKeyError{Key: "x", Path: "w[0]"}},
		{body: `{"operation":"terminal_list","argsX":{"x":1,"x":2}}`, wantErr: `request body: duplicate key "x" in argsX`},
	} {
		_, dup, err := decodeRequest([]byte(tc.body))
		switch {
		case tc.argsDup != nil:
			if err != nil || dup == nil || *dup != *tc.argsDup {
				t.Errorf("%s: got %v, %#v; want %#v", tc.body, err, dup, tc.argsDup)
			}
		case err == nil || !strings.Contains(err.Error(), tc.wantErr) || KindOf(err) != KindUsage:
			t.Errorf("%s: got %v, want %q", tc.body, err, tc.wantErr)
		}
	}
}
