package tools

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
)

func TestValidateEndpointURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url, wantErr string
	}{
		{"http://127.0.0.1:8080/call", ""},
		{"http://127.0.0.1:1/call", ""},
		{"https://127.0.0.1:8080/call", "scheme must be http"},
		{"http://127.0.0.2:8080/call", "host must be exactly 127.0.0.1"},
		{"http://localhost:8080/call", "host must be exactly 127.0.0.1"},
		{"http://[::1]:8080/call", "host must be exactly 127.0.0.1"},
		{"http://127.0.0.1/call", "host must be 127.0.0.1:PORT"},
		{"http://127.0.0.1:0/call", "port must be"},
		{"http://127.0.0.1:65536/call", "port must be"},
		{"http://127.0.0.1:080/call", "port must be"},
		{"http://127.0.0.1:8080/other", "path must be exactly /call"},
		{"http://127.0.0.1:8080/call/", "path must be exactly /call"},
		{"http://127.0.0.1:8080/%63all", "path must be exactly /call"},
		{"http://127.0.0.1:8080", "path must be exactly /call"},
		{"http://user:pw@127.0.0.1:8080/call", "userinfo"},
		{"http://127.0.0.1:8080/call?x=1", "query"},
		{"http://127.0.0.1:8080/call?", "query"},
		{"http://127.0.0.1:8080/call#frag", "fragment"},
		{"http://127.0.0.1.evil.com:8080/call", "host must be exactly 127.0.0.1"},
		{"http:127.0.0.1:8080/call", "userinfo"},
		{"", "empty url"},
		{"//127.0.0.1:8080/call", "scheme must be http"},
	}
	for _, tc := range tests {
		err := ValidateEndpointURL(tc.url)
		if tc.wantErr == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.url, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%q accepted", tc.url)
			continue
		}
		if !strings.HasPrefix(err.Error(), "Invalid local endpoint: ") || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%q: got %q, want %q", tc.url, err, tc.wantErr)
		}
	}
}

func TestReadSession(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := `{"node":"n1","token":"` + testToken + `","role":"agent","name":"x"}`
	tests := []struct {
		name, content, wantErr string
		mode                   os.FileMode
	}{
		{"ok", good, "", 0o600},
		{"operator", `{"node":"operator","token":"` + testToken + `","role":"operator"}`, "", 0o600},
		{"missing", "", "no such file", 0},
		{"unreadable", good, "permission denied", 0o000},
		{"not json", "hello", "not a JSON object", 0o600},
		{"bad json", "{", "parse session", 0o600},
		{"short token", `{"node":"n1","token":"abc","role":"agent"}`, "64 lowercase hex", 0o600},
		{"upper token", `{"node":"n1","token":"` + strings.ToUpper(testToken) + `","role":"agent"}`, "64 lowercase hex", 0o600},
		{"bad role", `{"node":"n1","token":"` + testToken + `","role":"root"}`, "role must be", 0o600},
		{"bad node", `{"node":"-x","token":"` + testToken + `","role":"agent"}`, "not a valid node id", 0o600},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".json")
			if tc.mode != 0 || tc.name != "missing" {
				writeFile(t, p, tc.content, 0o600)
				if err := os.Chmod(p, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			if tc.name == "unreadable" && os.Getuid() == 0 {
				t.Skip("root reads everything")
			}
			s, err := ReadSession(p)
			if tc.wantErr == "" {
				if err != nil || s.Token != testToken {
					t.Fatalf("%v %+v", err, s)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Fatal("error leaks the token")
			}
		})
	}
}

func TestValidNodeIDAndToken(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{"a": true, "A-b_9": true, strings.Repeat("a", 64): true,
		strings.Repeat("a", 65): false, "": false, "_a": false, "a.b": false, "a b": false, "é": false} {
		if ValidNodeID(id) != want {
			t.Errorf("ValidNodeID(%q) != %v", id, want)
		}
	}
	tok, err := NewToken()
	if err != nil || !ValidToken(tok) {
		t.Fatal(tok, err)
	}
	if tok2, _ := NewToken(); tok2 == tok {
		t.Fatal("tokens repeat")
	}
	if TokenEqual(tok, testToken) || !TokenEqual(tok, tok) {
		t.Fatal("TokenEqual")
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	sess := SessionPath("/s", "n1")
	if sess != "/s/sessions/n1.json" || EndpointPathFor(sess) != "/s/endpoint.json" ||
		EndpointPath("/s") != "/s/endpoint.json" || LockPath("/s") != "/s/server.lock" ||
		PreferencesPath("/s") != "/s/agent-tools/preferences.json" || OperatorSessionPath("/s") != "/s/sessions/operator.json" {
		t.Fatal("paths")
	}
}

func TestStateDir(t *testing.T) {
	t.Setenv("TERMSPRAWL_HOME", "/x/home")
	t.Setenv("XDG_STATE_HOME", "/x/xdg")
	t.Setenv("HOME", "/x/h")
	if d, _ := StateDir(); d != "/x/home" {
		t.Fatal(d)
	}
	t.Setenv("TERMSPRAWL_HOME", "")
	if d, _ := StateDir(); d != "/x/xdg/termsprawl" {
		t.Fatal(d)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	if d, _ := StateDir(); d != "/x/h/.local/state/termsprawl" {
		t.Fatal(d)
	}
}

func TestEnsureStateDir(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	if err := EnsureStateDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "sessions"), filepath.Join(dir, "agent-tools")} {
		fi, err := os.Stat(d)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("%s: %v %v", d, fi.Mode(), err)
		}
	}
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702} {
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		err := EnsureStateDir(dir)
		var sde *StateDirError
		if !errors.As(err, &sde) || !strings.Contains(err.Error(), "writable") || !strings.Contains(err.Error(), "chmod 700 "+dir) {
			t.Fatalf("mode %o: %v", mode, err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := EnsureStateDir(dir); err != nil {
		t.Fatalf("0755 should be accepted: %v", err)
	}
	file := filepath.Join(base, "file")
	writeFile(t, file, "x", 0o600)
	if err := EnsureStateDir(file); err == nil {
		t.Fatal("a file accepted as state dir")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f.json")
	writeFile(t, p, "old", 0o644)
	if err := WriteFileAtomic(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatal(string(b))
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temp files left: %v", entries)
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "f"), nil); err == nil {
		t.Fatal("write into a missing dir")
	}
}

func TestEndpointFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := EndpointPath(dir)
	ep := Endpoint{URL: "http://127.0.0.1:5/call", InstanceID: "i1", PID: 7, Version: "v"}
	if err := WriteEndpoint(p, ep); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadEndpoint(p); err != nil || got != ep {
		t.Fatal(got, err)
	}
	if removed, _ := RemoveEndpointIfOwned(p, "other"); removed {
		t.Fatal("removed another instance's endpoint")
	}
	if removed, err := RemoveEndpointIfOwned(p, "i1"); !removed || err != nil {
		t.Fatal(removed, err)
	}
	if removed, err := RemoveEndpointIfOwned(p, "i1"); removed || err != nil {
		t.Fatal(removed, err)
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"url":"x"}`, `{"url":1,"instance_id":"i"}`} {
		if _, err := ParseEndpoint([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestPreferences(t *testing.T) {
	t.Parallel()
	p, err := ParsePreferences([]byte(`{"executable":"kitty","args":["--title","x","{command}"]}`))
	if err != nil {
		t.Fatal(err)
	}
	argv := p.Argv([]string{"tmux", "-L", "s", "attach-session", "-t", "ts-a"})
	if strings.Join(argv, " ") != "kitty --title x tmux -L s attach-session -t ts-a" {
		t.Fatal(argv)
	}
	for _, bad := range []string{`{"executable":"k","args":[]}`, `{"executable":"k","args":["{command}","{command}"]}`, `{"args":["{command}"]}`} {
		if _, err := ParsePreferences([]byte(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestWaitForEndpoint(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("already there", func(t *testing.T) {
		dir := t.TempDir()
		if err := WriteEndpoint(EndpointPath(dir), Endpoint{URL: "u", InstanceID: "a"}); err != nil {
			t.Fatal(err)
		}
		ep, err := WaitForEndpoint(ctx, EndpointPath(dir), nil)
		if err != nil || ep.InstanceID != "a" {
			t.Fatal(ep, err)
		}
	})

	t.Run("directory appears later", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "a", "b")
		go func() {
			time.Sleep(50 * time.Millisecond) // the waiter watches the nearest existing parent
			// The directory and the file right after it: the waiter, moved
			// to the new directory or not yet, finds the file either way.
			_ = os.MkdirAll(dir, 0o700)
			_ = WriteEndpoint(EndpointPath(dir), Endpoint{URL: "u", InstanceID: "late"})
		}()
		ep, err := WaitForEndpoint(ctx, EndpointPath(dir), nil)
		if err != nil || ep.InstanceID != "late" {
			t.Fatal(ep, err)
		}
	})

	t.Run("partial write then full, accept filters", func(t *testing.T) {
		dir := t.TempDir()
		p := EndpointPath(dir)
		if err := WriteEndpoint(p, Endpoint{URL: "u", InstanceID: "stale"}); err != nil {
			t.Fatal(err)
		}
		// The writer starts once the waiter has read the stale endpoint
		// (and refused it).
		sawStale := make(chan struct{})
		var once sync.Once
		go func() {
			<-sawStale
			// A non-atomic writer: truncated content first.
			_ = os.WriteFile(p, []byte(`{"url":"u","inst`), 0o600)
			time.Sleep(80 * time.Millisecond)
			f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			_, _ = f.WriteString(`ance_id":"fresh"}`)
			_ = f.Close()
		}()
		ep, err := WaitForEndpoint(ctx, p, func(ep Endpoint) bool {
			if ep.InstanceID == "stale" {
				once.Do(func() { close(sawStale) })
				return false
			}
			return true
		})
		if err != nil || ep.InstanceID != "fresh" {
			t.Fatal(ep, err)
		}
	})

	t.Run("deadline", func(t *testing.T) {
		short, c := context.WithTimeout(ctx, 100*time.Millisecond)
		defer c()
		_, err := WaitForEndpoint(short, EndpointPath(t.TempDir()), nil)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
	})
}

func FuzzReadSession(f *testing.F) {
	f.Add([]byte(`{"node":"n1","token":"` + testToken + `","role":"agent"}`))
	f.Add([]byte(`{"node":1}`))
	f.Add([]byte(`null`))
	f.Add([]byte("\xff{"))
	dir := f.TempDir()
	p := filepath.Join(dir, "s.json")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := ReadSession(p)
		if err == nil && (!ValidToken(s.Token) || !ValidRole(s.Role) || !ValidNodeID(s.Node)) {
			t.Fatalf("invalid session accepted: %+v", s)
		}
	})
}

func FuzzParseEndpoint(f *testing.F) {
	f.Add([]byte(`{"url":"http://127.0.0.1:1/call","instance_id":"i","pid":1,"version":"v"}`))
	f.Add([]byte(`{"url":"http://[::1]:1/call","instance_id":"i"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ep, err := ParseEndpoint(data)
		if err != nil {
			return
		}
		if ep.URL == "" || ep.InstanceID == "" {
			t.Fatalf("incomplete endpoint accepted: %+v", ep)
		}
		_ = ValidateEndpointURL(ep.URL) // must not panic
	})
}

func TestWatchFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	target := filepath.Join(dir, "s.json")
	other := filepath.Join(dir, "other.json")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 10)
	ready := make(chan error, 1)
	go func() { ready <- WatchFiles(ctx, []string{target}, func(p string) { got <- p }) }()
	// Give the watcher a moment to arm; an event before that is not lost
	// for the test's purpose because we write again below if needed.
	deadline := time.After(10 * time.Second)
	for i := 0; ; i++ {
		if err := WriteFileAtomic(other, []byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := WriteFileAtomic(target, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		select {
		case p := <-got:
			if p != target {
				t.Fatalf("onChange(%q), want only %q", p, target)
			}
			cancel()
			if err := <-ready; !errors.Is(err, context.Canceled) {
				t.Fatalf("WatchFiles returned %v after cancel", err)
			}
			return
		case <-time.After(200 * time.Millisecond):
		case <-deadline:
			t.Fatal("no change reported for an atomic replace of the watched file")
		}
	}
}

// TestEnsureStateDirForeignOwner needs root (it chowns a directory to
// another user); CI machines of this kind run as root.
func TestEnsureStateDirForeignOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		testenv.SkipOrFail(t, "needs root to give a directory to another user")
	}
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	err := EnsureStateDir(dir)
	var sde *StateDirError
	if !errors.As(err, &sde) || !strings.Contains(err.Error(), "owned") {
		t.Fatalf("a state dir owned by another user: %v", err)
	}
}

func TestNodeIDFor(t *testing.T) {
	inUse := map[string]bool{"web": true, "web-1": true, "term-1": true}
	taken := func(id string) bool { return inUse[id] }
	long := strings.Repeat("x", 50)
	cases := []struct{ name, want string }{
		{"api", "api"},
		{"web", "web-2"},                // web and web-1 are taken
		{"my app/../x", "my-app-x"},     // a slug of the name
		{"", "term-2"},                  // no name: term-N
		{"-_-", "term-2"},               // nothing left of the name
		{"_x", "x"},                     // trimmed to a valid id
		{"operator", "operator-1"},      // the operator's id is never a node's
		{long, strings.Repeat("x", 40)}, // cut to 40
		{"ünïcode", "n-code"},           // non-ASCII runs become one dash, then trimmed
		{"$(rm -rf ~)", "rm--rf"},       // a hostile name is only a slug
	}
	for _, c := range cases {
		if got := NodeIDFor(c.name, taken); got != c.want || !ValidNodeID(got) {
			t.Errorf("NodeIDFor(%q) = %q (valid %v); want %q", c.name, got, ValidNodeID(got), c.want)
		}
	}
}
