package tmuxctl

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
)

// attachInternal creates a detached session running argv and attaches a
// control client to it (the in-package twin of client_test.go's helper).
func attachInternal(t *testing.T, srv *tmuxtest.Server, name string, argv ...string) *Client {
	t.Helper()
	srv.Must(append([]string{"new-session", "-d", "-s", name, "-x", "80", "-y", "24", "--"}, argv...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Start(ctx, Config{Socket: srv.Socket, Args: []string{"attach-session", "-t", "=" + name}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitPaneText takes a pane's output until it contains want or the
// deadline passes; it reports whether want arrived.
func waitPaneText(p *PaneStream, want string, d time.Duration) (bool, []byte) {
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	var got []byte
	for !bytes.Contains(got, []byte(want)) {
		select {
		case <-p.Ready():
			got = append(got, p.Take().Data...)
		case <-timeout.C:
			return false, got
		}
	}
	return true, got
}

// TestReaderRunsWhileWriteBlocked holds a write to tmux's stdin inside the
// write path (writeHook) and proves that meanwhile the reader still
// delivers pane output (it needs c.mu for every %output line), that
// another goroutine can still queue a command, and that both commands then
// get their own replies in order. With the write done under c.mu the
// reader is stuck until the write ends: the coupling that lets a huge
// command and a flooding pane wedge each other.
func TestReaderRunsWhileWriteBlocked(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := attachInternal(t, srv, "wb", "cat")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := c.Run(ctx, "display-message -p '#{pane_id}'")
	if err != nil {
		t.Fatal(err)
	}
	pane := c.Pane(out[0]) // taken before the write blocks

	entered := make(chan struct{})
	release := make(chan struct{})
	c.writeHook = func(b []byte) {
		if bytes.Contains(b, []byte("first-while-blocked")) {
			close(entered)
			<-release
		}
	}
	t.Cleanup(func() { releaseOnce(release) }) // before c.Close, even on Fatal
	type result struct {
		out []string
		err error
	}
	first := make(chan result, 1)
	go func() {
		out, err := c.Run(ctx, "display-message -p first-while-blocked")
		first <- result{out, err}
	}()
	<-entered // the first command's write is now blocked

	// Another tmux client makes the pane print (cat echoes what it is
	// given): the reader must deliver that %output while the write waits.
	srv.Must("send-keys", "-t", out[0], "-l", "printed-while-blocked")
	if ok, got := waitPaneText(pane, "printed-while-blocked", 5*time.Second); !ok {
		t.Fatalf("reader delivered no %%output while a write was blocked (got %q): it is stuck behind the writer", got)
	}

	// A second command can be queued meanwhile; it must not be written
	// before the first.
	queued := make(chan struct{})
	second := make(chan result, 1)
	go func() {
		close(queued)
		out, err := c.Run(ctx, "display-message -p second-after-blocked")
		second <- result{out, err}
	}()
	<-queued
	// Wait until the second request is queued (pending holds it), so the
	// order of the two is fixed before the first write is released.
	var n int
	if !testenv.Until(15*time.Second, func() bool {
		c.mu.Lock()
		n = len(c.pending)
		c.mu.Unlock()
		select {
		case r := <-second:
			t.Fatalf("second command finished while the first write was blocked: %q %v", r.out, r.err)
		default:
		}
		return n == 2
	}) {
		t.Fatalf("second command was not queued while the first write was blocked (pending=%d)", n)
	}
	releaseOnce(release)
	r1, r2 := <-first, <-second
	if r1.err != nil || len(r1.out) != 1 || r1.out[0] != "first-while-blocked" {
		t.Fatalf("first reply = %q, %v", r1.out, r1.err)
	}
	if r2.err != nil || len(r2.out) != 1 || r2.out[0] != "second-after-blocked" {
		t.Fatalf("second reply = %q, %v", r2.out, r2.err)
	}
}

// TestBlockedWriteHonoursOtherCallersContext: while one caller's write is
// stuck, another caller's Run still returns when its context ends (it
// queued its line and waits for the reply, not for the writer lock).
func TestBlockedWriteHonoursOtherCallersContext(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := attachInternal(t, srv, "wc", "sleep", "60")
	entered := make(chan struct{})
	release := make(chan struct{})
	c.writeHook = func(b []byte) {
		if bytes.Contains(b, []byte("stuck-write")) {
			close(entered)
			<-release
		}
	}
	t.Cleanup(func() { releaseOnce(release) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Run(ctx, "display-message -p stuck-write")
		done <- err
	}()
	<-entered
	short, cancelShort := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() {
		_, err := c.Run(short, "display-message -p behind")
		got <- err
	}()
	cancelShort()
	select {
	case err := <-got:
		if err == nil {
			t.Fatal("Run returned no error although its context ended and its line was never written")
		}
	case <-ctx.Done():
		t.Fatal("Run ignored its context while another caller's write was blocked")
	}
	releaseOnce(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The abandoned command was still written (and answered): the client
	// stays in step.
	if out, err := c.Run(ctx, "display-message -p in-step"); err != nil || out[0] != "in-step" {
		t.Fatalf("after abandoned command: %q, %v", out, err)
	}
}

func releaseOnce(ch chan struct{}) {
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// controlText is n bytes of control characters (no NUL, which a command
// line cannot carry), each of which Quote writes as a 4-byte octal escape.
func controlText(n int) string {
	var b strings.Builder
	b.Grow(n)
	for i := 0; b.Len() < n; i++ {
		c := byte(1 + i%31) // 0x01..0x1f
		if i%32 == 31 {
			c = 0x7f
		}
		b.WriteByte(c)
	}
	return b.String()
}

// TestHugeControlTextWhileFlooding sends 64 KiB of control characters with
// send-keys -l (a ~256 KiB command line) to a pane reading raw bytes while
// another pane of the same window floods output at the client: the text
// must arrive intact and the flood must keep flowing during the write.
func TestHugeControlTextWhileFlooding(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	dir := t.TempDir()
	const size = 64 << 10
	text := controlText(size)
	outFile, ready, done := dir+"/got", dir+"/ready", dir+"/done"
	c := attachInternal(t, srv, "huge", "sh", "-c",
		fmt.Sprintf("stty raw -echo -iexten -ixoff; touch %s; head -c %d > %s; touch %s; sleep 60", ready, size, outFile, done))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := c.Run(ctx, "display-message -p '#{pane_id}'")
	if err != nil {
		t.Fatal(err)
	}
	target := out[0]
	out, err = c.Run(ctx, Command("split-window", "-d", "-P", "-F", "#{pane_id}", "-t", target,
		"yes", "flood flood flood flood flood flood flood flood 0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	flood := c.Pane(out[0])
	// The flood pane's only consumer: it takes everything (nothing is
	// dropped) and says when the flood is under way.
	stopTaking := make(chan struct{})
	flooding := make(chan struct{})
	tookDone := make(chan uint64)
	go func() {
		var n uint64
		signal := flooding
		for {
			select {
			case <-flood.Ready():
				n += uint64(len(flood.Take().Data))
				if n >= 1<<20 && signal != nil {
					close(signal)
					signal = nil
				}
			case <-stopTaking:
				tookDone <- n
				return
			}
		}
	}()
	waitFileInternal(t, ready)
	select {
	case <-flooding:
	case <-ctx.Done():
		t.Fatal("flood pane did not start flooding")
	}
	line := Command("send-keys", "-t", target, "-l", "--", text)
	if len(line) < 4*size {
		t.Fatalf("command line is %d bytes, want the ~256 KiB of a fully escaped text", len(line))
	}
	before := flood.Total()
	if _, err := c.Run(ctx, line); err != nil {
		t.Fatal(err)
	}
	during := flood.Total() - before
	waitFileInternal(t, done)
	close(stopTaking)
	<-tookDone
	got := readFileInternal(t, outFile)
	if string(got) != text {
		i := 0
		for i < len(got) && i < len(text) && got[i] == text[i] {
			i++
		}
		t.Fatalf("text differs at byte %d (got %d bytes, want %d)", i, len(got), len(text))
	}
	t.Logf("flood bytes received while the %d-byte command was written and answered: %d", len(line), during)
	if out, err := c.Run(ctx, "display-message -p still-in-step"); err != nil || out[0] != "still-in-step" {
		t.Fatalf("after huge command: %q, %v", out, err)
	}
}

func waitFileInternal(t *testing.T, path string) {
	t.Helper()
	// A pane's script creates it.
	if !testenv.Until(20*time.Second, func() bool { _, err := os.Stat(path); return err == nil }) {
		t.Fatalf("%s did not appear", path)
	}
}

func readFileInternal(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
