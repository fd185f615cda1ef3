package tools

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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

func TestNewHTTPServerTimeouts(t *testing.T) {
	s := NewHTTPServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.IdleTimeout <= 0 || s.WriteTimeout < 50e9 {
		t.Fatalf("%+v", s)
	}
}

// TestImports enforces DESIGN.md: tools imports the standard library and
// fsnotify only.
func TestImports(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range af.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first := strings.SplitN(p, "/", 2)[0]
			if strings.Contains(first, ".") && p != "github.com/fsnotify/fsnotify" {
				t.Errorf("%s imports %s: tools may import only the standard library and fsnotify", f, p)
			}
		}
	}
}
