package monitor

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

// Kick sends the state now: with a poll that never comes, a node added
// reaches an open stream only through Kick. ServeStream serves the same
// hub to a request its caller authenticated (the tool server's /events).
func TestKickAndServeStream(t *testing.T) {
	t.Parallel()
	e := newFakeEngine()
	e.add("a", "hello")
	saved, err := Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tools.ListenLoopback()
	if err != nil {
		t.Fatal(err)
	}
	hostPort := ln.Addr().String()
	m, err := New(Config{Saved: saved, Engine: e, Side: fakeSide{}, HostPort: func() string { return hostPort }, Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := tools.NewHTTPServer(http.HandlerFunc(m.ServeStream))
	go srv.Serve(ln)
	t.Cleanup(func() {
		m.Close()
		srv.Close()
	})
	s := openSSE(t, "http://"+hostPort+"/events?show=a")
	if frame := s.nextOf(t, "frame"); !strings.Contains(string(frame), `"node":"a"`) {
		t.Fatalf("the frame has no screen of a: %s", frame)
	}
	e.add("b", "second")
	m.Kick()
	got := make(chan string, 1)
	go func() { got <- string(s.nextOf(t, "state")) }()
	select {
	case st := <-got:
		if !strings.Contains(st, `"terminal":"b"`) {
			t.Fatalf("the state after Kick has no b: %s", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no state event after Kick (the poll is an hour away)")
	}
	resp, _ := get(t, "http://"+hostPort+"/events?bogus=1", nil)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("an unknown parameter: HTTP %d, want 400", resp.StatusCode)
	}
}
