package probe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
)

func TestDisabledWithoutASession(t *testing.T) {
	t.Setenv(SessionEnv, "")
	p := New(Options{})
	if p.Enabled() {
		t.Fatal("enabled without a session file")
	}
	if err := p.Publish(&Node{ID: "a", Role: RoleButton}); err != nil {
		t.Fatal(err)
	}
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Close()
	var nilPub *Publisher
	if nilPub.Enabled() || nilPub.Stats() != (Stats{}) {
		t.Fatal("a nil publisher")
	}
}

// Publish never waits for the orchestrator: while a send is stuck, every
// Publish returns at once, only the latest tree is kept, and it is sent
// next (the others coalesced).
func TestPublishNeverBlocksAndCoalesces(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 16)
	var mu sync.Mutex
	var sent []string
	p := New(Options{Rate: 1000, Send: func(ctx context.Context, tree json.RawMessage) error {
		started <- struct{}{}
		<-release
		var n Node
		json.Unmarshal(tree, &n)
		mu.Lock()
		sent = append(sent, n.Name)
		mu.Unlock()
		return nil
	}})
	defer p.Close()
	p.Publish(&Node{ID: "r", Role: RoleWindow, Name: "first"})
	<-started // the sender holds "first" and is stuck
	for i := range 1000 {
		root := &Node{ID: "r", Role: RoleWindow, Name: "n" + strings.Repeat("x", i%3)}
		if i == 999 {
			root.Name = "last"
		}
		if err := p.Publish(root); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(sent, ",") != "first,last" {
		t.Fatalf("sent %v", sent)
	}
	if st := p.Stats(); st.Published != 2 || st.Coalesced != 999 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// At most Rate commits a second: a fake clock is not needed, the sender
// spaces its sends by 1/Rate, so N sends take at least (N-1)/Rate.
func TestRateBoundsCommits(t *testing.T) {
	t.Parallel()
	var times []time.Time
	var mu sync.Mutex
	p := New(Options{Rate: 50, Send: func(ctx context.Context, tree json.RawMessage) error {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
		return nil
	}})
	defer p.Close()
	for i := range 5 {
		p.Publish(&Node{ID: "r", Role: RoleWindow, Value: string(rune('a' + i))})
		p.Flush(context.Background())
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(times); i++ {
		if gap := times[i].Sub(times[i-1]); gap < 20*time.Millisecond-time.Millisecond {
			t.Fatalf("commits %d and %d only %s apart (rate 50/s)", i-1, i, gap)
		}
	}
}

func TestErrorsAreReportedAndDoNotStop(t *testing.T) {
	t.Parallel()
	var got []error
	var mu sync.Mutex
	fail := true
	p := New(Options{Rate: 1000, OnError: func(err error) { mu.Lock(); got = append(got, err); mu.Unlock() },
		Send: func(ctx context.Context, tree json.RawMessage) error {
			if fail {
				return errors.New("refused")
			}
			return nil
		}})
	defer p.Close()
	p.Publish(&Node{ID: "a", Role: "nope"})
	if err := p.Flush(context.Background()); err == nil || err.Error() != "refused" {
		t.Fatalf("flush %v", err)
	}
	fail = false
	p.Publish(&Node{ID: "a", Role: RoleButton})
	if err := p.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Failed != 1 || st.Published != 1 || len(got) != 1 {
		t.Fatalf("stats %+v errors %v", st, got)
	}
}

func TestLayoutHelpers(t *testing.T) {
	t.Parallel()
	block := "\x1b[1m[ OK ]\x1b[0m\nsecond line"
	if w, h := Measure(block); w != 11 || h != 2 {
		t.Fatalf("measure %d %d", w, h)
	}
	col := Column{}
	if r := col.Next("a\nb"); r != 0 {
		t.Fatal(r)
	}
	n := Place(&Node{ID: "ok", Role: RoleButton}, col.Next(block), 3, block)
	if n.Bounds != (Bounds{Row: 2, Column: 3, Width: 11, Height: 2}) {
		t.Fatalf("place %+v", n.Bounds)
	}
	root := (&Node{ID: "r", Role: RoleWindow, Bounds: Bounds{Width: 100, Height: 50}}).Add(n,
		&Node{ID: "off", Role: RoleText, Bounds: Bounds{Row: 30, Column: 0, Width: 5, Height: 1}})
	Shift(root, 1, 0)
	Clip(root, 10, 24)
	if root.Bounds != (Bounds{Row: 1, Width: 10, Height: 23}) || len(root.Children) != 1 || root.Find("ok").Bounds != (Bounds{Row: 3, Column: 3, Width: 7, Height: 2}) {
		t.Fatalf("clip %+v %+v", root.Bounds, root.Children)
	}
}

type counter struct{ n int }

func (c *counter) Init() tea.Cmd { return nil }
func (c *counter) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	if _, ok := msg.(tea.KeyPressMsg); ok {
		c.n++
	}
	return c, nil
}
func (c *counter) View() tea.View { return tea.NewView("count") }

// Wrap publishes a frame's tree after View, once per distinct tree.
func TestWrapPublishesChangedTrees(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var values []string
	p := New(Options{Rate: 1000, Send: func(ctx context.Context, tree json.RawMessage) error {
		var n Node
		json.Unmarshal(tree, &n)
		mu.Lock()
		values = append(values, n.Value)
		mu.Unlock()
		return nil
	}})
	defer p.Close()
	c := &counter{}
	m := Wrap(c, p, func(tm tea.Model) *Node {
		return &Node{ID: "r", Role: RoleText, Value: strings.Repeat("|", tm.(*counter).n)}
	})
	m.View()
	p.Flush(context.Background())
	m.View() // the same tree: not sent again
	m.Update(tea.KeyPressMsg{Code: 'a'})
	if v := m.View(); v.Content != "count" {
		t.Fatalf("view %q", v.Content)
	}
	p.Flush(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(values, ",") != ",|" {
		t.Fatalf("sent %q", values)
	}
}

// A tree that found no orchestrator is sent again until it is delivered
// (an orchestrator restart), unless a newer one replaced it.
func TestUnreachableIsRetried(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := 0
	p := New(Options{Rate: 1000, Send: func(ctx context.Context, tree json.RawMessage) error {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls <= 2 {
			return fmt.Errorf("connect: %w", ErrUnreachable)
		}
		return nil
	}})
	defer p.Close()
	p.Publish(&Node{ID: "a", Role: RoleButton})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Published != 1 || st.Failed != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// After an orchestrator restart (another instance), the last tree is
// sent again: the new orchestrator starts with none.
func TestResentAfterRestart(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	instance, sent := "one", 0
	resent := make(chan struct{}, 1)
	p := New(Options{Rate: 1000,
		Instance: func() string { mu.Lock(); defer mu.Unlock(); return instance },
		Send: func(ctx context.Context, tree json.RawMessage) error {
			mu.Lock()
			defer mu.Unlock()
			sent++
			if sent == 2 {
				resent <- struct{}{}
			}
			return nil
		}})
	defer p.Close()
	p.Publish(&Node{ID: "a", Role: RoleButton})
	p.Flush(context.Background())
	mu.Lock()
	instance = "two"
	mu.Unlock()
	select {
	case <-resent:
	case <-time.After(10 * time.Second):
		t.Fatal("the tree was not sent again after the restart")
	}
	p.Flush(context.Background())
	if st := p.Stats(); st.Published != 2 {
		t.Fatalf("stats %+v", st)
	}
}
