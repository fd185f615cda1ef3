package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/tools"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := Load(dir, nil, "")
	if err != nil || cfg.Mode != tools.NotifyNormal || len(cfg.Targets) != 1 || cfg.Targets[0].Kind != KindTmux {
		t.Fatalf("default: %+v %v", cfg, err)
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, FileName), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("{\n  \"mode\": \"all\",\n  \"targets\": [\"terminal\", \"webhook=https://ntfy.sh/mytopic\"]\n}\n")
	cfg, err = Load(dir, []string{"desktop"}, "")
	if err != nil || cfg.Mode != tools.NotifyAll || len(cfg.Targets) != 3 || cfg.Targets[1].URL != "https://ntfy.sh/mytopic" || cfg.Targets[2].Kind != KindDesktop {
		t.Fatalf("file and flags: %+v %v", cfg, err)
	}
	if cfg, err = Load(dir, nil, "quiet"); err != nil || cfg.Mode != tools.NotifyQuiet {
		t.Fatalf("the mode flag wins: %+v %v", cfg, err)
	}
	bad := []struct{ file, want string }{
		{"{\n  \"mode\": \"all\",\n  \"targets\": [\"tmux\",]\n}\n", "notify.json:3:"},
		{"{\n  \"targets\": [\n    \"tmux\",\n    \"pager\"\n  ]\n}\n", `notify.json:4: unknown notification target "pager"`},
		{"{\n  \"targets\": [\"webhook=ftp://example.com/x\"]\n}\n", "notify.json:2: webhook URL \"ftp://example.com/x\": only http:// and https://"},
		{"{\n\n  \"mode\": \"loud\"\n}\n", "notify.json:3: unknown notification mode \"loud\""},
		{"{\"colour\": 1}", "notify.json:1: json: unknown field \"colour\""},
		{"{\"targets\": [1]}", "notify.json:1: a target is a string"},
	}
	for _, b := range bad {
		write(b.file)
		if _, err := Load(dir, nil, ""); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: %v, want %q", b.file, err, b.want)
		}
	}
	os.Remove(filepath.Join(dir, FileName))
	for _, f := range []string{"webhook=file:///etc/passwd", "webhook=http://", "sms", "webhook="} {
		if _, err := Load(dir, []string{f}, ""); err == nil || !strings.Contains(err.Error(), "--notify") {
			t.Errorf("--notify %s: %v", f, err)
		}
	}
	if _, err := Load(dir, nil, "loud"); err == nil {
		t.Error("--notify-mode loud accepted")
	}
}

func TestWanted(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode, event string
		want        bool
	}{
		{"quiet", EventNeedsHuman, true}, {"quiet", EventCrash, false}, {"quiet", EventError, false}, {"quiet", EventTurnDone, false},
		{"normal", EventNeedsHuman, true}, {"normal", EventCrash, true}, {"normal", EventError, true}, {"normal", EventExited, false}, {"normal", EventTurnDone, false},
		{"all", EventTurnDone, true}, {"all", EventExited, true}, {"all", "other", false},
	} {
		if got := Wanted(c.mode, c.event); got != c.want {
			t.Errorf("Wanted(%s, %s) = %v", c.mode, c.event, got)
		}
	}
}

// receiver is a webhook that records posts and answers with status (or
// hangs until released).
type receiver struct {
	mu     sync.Mutex
	posts  []Event
	status int
	hang   chan struct{}
	got    chan struct{}
}

func newReceiver(t *testing.T, status int) (*receiver, *httptest.Server) {
	r := &receiver{status: status, got: make(chan struct{}, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			t.Errorf("webhook body %q: %v", b, err)
		}
		r.mu.Lock()
		r.posts = append(r.posts, e)
		st, hang := r.status, r.hang
		r.mu.Unlock()
		r.got <- struct{}{}
		if hang != nil {
			select {
			case <-hang:
			case <-req.Context().Done():
			}
		}
		w.WriteHeader(st)
	}))
	t.Cleanup(srv.Close)
	return r, srv
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.posts)
}

func TestWebhookOnePerNodeAndEvent(t *testing.T) {
	t.Parallel()
	r, srv := newReceiver(t, 200)
	n := New(tools.NotifyNormal, []Target{Webhook{URL: srv.URL}}, nil, Options{})
	defer n.Close()
	e := Event{Node: "n1", Name: "build", Kind: "claude", Event: EventNeedsHuman, State: "waiting", Title: "n1 needs you", Text: "Bash: ls", Answer: "termsprawl answer d-1 allow|deny"}
	if !n.Notify(e) {
		t.Fatal("not queued")
	}
	if n.Notify(e) {
		t.Fatal("a second one within the window was queued")
	}
	other := e
	other.Node = "n2"
	if !n.Notify(other) {
		t.Fatal("another node's was not queued")
	}
	crash := e
	crash.Event = EventCrash
	if !n.Notify(crash) {
		t.Fatal("another event was not queued")
	}
	for range 3 {
		<-r.got
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.posts[0]
	if p.Node != "n1" || p.Name != "build" || p.Kind != "claude" || p.Event != EventNeedsHuman || p.State != "waiting" ||
		p.Title == "" || p.Text != "Bash: ls" || p.Answer == "" || p.At == "" {
		t.Fatalf("post %+v", p)
	}
	if _, err := time.Parse(time.RFC3339, p.At); err != nil {
		t.Fatal(err)
	}
}

func TestWindowPasses(t *testing.T) {
	t.Parallel()
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	n := New(tools.NotifyAll, []Target{FuncTarget{Label: "x", F: func(context.Context, Event) (string, error) { return "ok", nil }}}, nil, Options{Now: clock})
	defer n.Close()
	e := Event{Node: "n", Event: EventTurnDone}
	if !n.Notify(e) || n.Notify(e) {
		t.Fatal("window")
	}
	mu.Lock()
	now = now.Add(30 * time.Second)
	mu.Unlock()
	if !n.Notify(e) {
		t.Fatal("after the window")
	}
}

func TestQuietModeSendsNoCrash(t *testing.T) {
	t.Parallel()
	r, srv := newReceiver(t, 200)
	n := New(tools.NotifyQuiet, []Target{Webhook{URL: srv.URL}}, nil, Options{})
	if n.Notify(Event{Node: "n", Event: EventCrash}) || n.Notify(Event{Node: "n", Event: EventError}) {
		t.Fatal("quiet queued a crash or error")
	}
	n.Notify(Event{Node: "n", Event: EventNeedsHuman})
	<-r.got
	n.Close()
	if c := r.count(); c != 1 {
		t.Fatalf("%d posts", c)
	}
}

func TestRetriedWithBackoff(t *testing.T) {
	t.Parallel()
	r, srv := newReceiver(t, 500)
	n := New(tools.NotifyNormal, []Target{Webhook{URL: srv.URL}}, nil, Options{Backoff: time.Millisecond, Attempts: 3})
	defer n.Close()
	n.Notify(Event{Node: "n", Event: EventError})
	for range 3 {
		<-r.got
	}
	r.mu.Lock()
	r.status = 200
	r.mu.Unlock()
	n.Notify(Event{Node: "m", Event: EventError})
	<-r.got
	if c := r.count(); c != 4 {
		t.Fatalf("%d posts, want 3 attempts and one more", c)
	}
}

// A receiver that hangs holds the sender, not Notify: a full queue drops.
func TestHangingReceiverNeverBlocks(t *testing.T) {
	t.Parallel()
	r, srv := newReceiver(t, 200)
	r.hang = make(chan struct{})
	defer close(r.hang)
	n := New(tools.NotifyAll, []Target{Webhook{URL: srv.URL}}, nil, Options{Queue: 2, SendTimeout: time.Minute})
	n.Notify(Event{Node: "n0", Event: EventError})
	<-r.got // the sender is stuck in this post
	done := make(chan struct{})
	go func() {
		for i := range 10 {
			n.Notify(Event{Node: "n" + string(rune('a'+i)), Event: EventError})
		}
		close(done)
	}()
	<-done // returns although nothing can be sent
	n.mu.Lock()
	dropped := n.dropped
	n.mu.Unlock()
	if dropped != 8 {
		t.Fatalf("dropped %d, want 8 (queue of 2)", dropped)
	}
	n.Close() // cancels the post in flight
}

func TestTestAnswers(t *testing.T) {
	t.Parallel()
	_, ok := newReceiver(t, 200)
	_, bad := newReceiver(t, 503)
	n := New(tools.NotifyQuiet, []Target{Webhook{URL: ok.URL}, Webhook{URL: bad.URL}}, nil, Options{})
	defer n.Close()
	got := n.Test(context.Background(), Event{Node: "operator", Event: EventTest, Title: "test"})
	if len(got) != 2 || !got[0].OK || got[0].Answer != "HTTP 200 OK" || got[1].OK || !strings.Contains(got[1].Answer, "503") {
		t.Fatalf("%+v", got)
	}
}

func TestOSC(t *testing.T) {
	t.Parallel()
	got := string(OSC("n1; needs you", "Bash:\x1b[31m ls\n"))
	want := "\x1b]9;n1; needs you: Bash:^[[31m ls\a\x1b]777;notify;n1, needs you;Bash:^[[31m ls\a"
	if got != want {
		t.Fatalf("%q\nwant %q", got, want)
	}
}

// TestBudgetCrossingsEach: a budget's 80 % and its 100 % action, and
// another budget's crossing, are each sent, however close together; the
// same crossing twice is one.
func TestBudgetCrossingsEach(t *testing.T) {
	t.Parallel()
	n := New(tools.NotifyQuiet, []Target{FuncTarget{Label: "x", F: func(context.Context, Event) (string, error) { return "ok", nil }}}, nil, Options{})
	defer n.Close()
	at80 := Event{Node: "n", Event: EventBudget, State: "notify", Title: "n: budget fleet per day"}
	at100 := at80
	at100.State = "pause"
	other := at80
	other.Title = "n: budget kind:claude per life"
	if !n.Notify(at80) || !n.Notify(at100) || !n.Notify(other) {
		t.Fatal("a crossing was not queued")
	}
	if n.Notify(at100) {
		t.Fatal("the same crossing twice within the window")
	}
}
