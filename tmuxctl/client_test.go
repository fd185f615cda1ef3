package tmuxctl_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/termsprawl/termsprawl/internal/testenv"
	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tmuxctl"
)

// startSession creates a detached session running argv and attaches a
// control client to it.
func startSession(t *testing.T, srv *tmuxtest.Server, name string, cfg tmuxctl.Config, argv ...string) *tmuxctl.Client {
	t.Helper()
	args := append([]string{"new-session", "-d", "-s", name, "-x", "80", "-y", "24", "--"}, argv...)
	srv.Must(args...)
	cfg.Socket = srv.Socket
	cfg.Args = []string{"attach-session", "-t", "=" + name}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := tmuxctl.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctx10(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRunAndErrors(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := startSession(t, srv, "a", tmuxctl.Config{}, "sleep", "60")
	ctx := ctx10(t)

	out, err := c.Run(ctx, tmuxctl.Command("display-message", "-p", "#{session_name} ok"))
	if err != nil || len(out) != 1 || out[0] != "a ok" {
		t.Fatalf("display = %q, %v", out, err)
	}
	_, err = c.Run(ctx, "bogus-command")
	var ce *tmuxctl.CommandError
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "unknown command: bogus-command") {
		t.Fatalf("bogus command error = %v, want CommandError naming it", err)
	}
	// A runtime error stops the rest of the line; the first output is kept.
	outs, err := c.RunMany(ctx, "display-message -p one", "kill-pane -t nosuch", "display-message -p three")
	if !errors.As(err, &ce) || ce.Index != 1 || len(outs) != 1 || outs[0][0] != "one" {
		t.Fatalf("RunMany = %q, %v (index %d)", outs, err, ce.Index)
	}
	// The client is still in step afterwards.
	if out, err := c.Run(ctx, "display-message -p after"); err != nil || out[0] != "after" {
		t.Fatalf("after error: %q, %v", out, err)
	}
	// Lines that must never be sent are refused before any I/O.
	for _, bad := range []string{"", "  ", "# c", "display -p a\nb", "display -p a;b", "display -p \x00"} {
		if _, err := c.Run(ctx, bad); !errors.Is(err, tmuxctl.ErrBadCommand) {
			t.Errorf("Run(%q) = %v, want ErrBadCommand", bad, err)
		}
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	srv.Must("new-session", "-d", "-s", "x", "sleep", "60")
	_, err := tmuxctl.Start(ctx10(t), tmuxctl.Config{Socket: srv.Socket, Args: []string{"attach-session", "-t", "=nosuch"}})
	if err == nil || !strings.Contains(err.Error(), "can't find session") {
		t.Fatalf("attach to missing session: %v", err)
	}
	if _, err := tmuxctl.Start(ctx10(t), tmuxctl.Config{Args: []string{"attach"}}); err == nil {
		t.Fatal("Start without a socket must refuse (never the default server)")
	}
	if n := len(tmuxtest.ControlClients(srv.Socket)); n != 0 {
		t.Fatalf("%d control clients left after failed starts", n)
	}
}

func TestQuoteRoundTripThroughTmux(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := startSession(t, srv, "q", tmuxctl.Config{}, "sleep", "60")
	ctx := ctx10(t)
	file := filepath.Join(t.TempDir(), "buf")
	for _, s := range []string{
		"plain", "a b", "semi;colon", ";", "it's", `dq"x"`, `back\slash`, "$HOME", "~root",
		"#{pane_id}", "%1", "{", "}", "héllo wörld ✓", "tab\tx", "-dash", "'", `\`, `\\'`, "a\nb",
	} {
		// "--" ends the flags so an argument may start with '-'.
		if _, err := c.Run(ctx, tmuxctl.Command("set-buffer", "-b", "qt", "--", s)); err != nil {
			t.Fatalf("set-buffer %q: %v", s, err)
		}
		// save-buffer writes the bytes as they are (show-buffer escapes).
		if _, err := c.Run(ctx, tmuxctl.Command("save-buffer", "-b", "qt", file)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != s {
			t.Errorf("round trip of %q through tmux gave %q", s, got)
		}
	}
}

func TestPipelinedFromManyGoroutines(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := startSession(t, srv, "p", tmuxctl.Config{}, "sleep", "60")
	ctx := ctx10(t)
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				want := fmt.Sprintf("g%d-i%d", g, i)
				out, err := c.Run(ctx, "display-message -p "+want)
				if err != nil || len(out) != 1 || out[0] != want {
					errs <- fmt.Errorf("got %q, %v want %q", out, err, want)
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestOutputEveryByte sends every byte value and split UTF-8 through a pane
// with output post-processing off: the stream must match bit for bit.
func TestOutputEveryByte(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	dir := t.TempDir()
	var payload []byte
	for r := 0; r < 64; r++ {
		for i := 0; i < 256; i++ {
			payload = append(payload, byte(i))
		}
		payload = append(payload, "héllo ✓ 日本語 🎉\n"...)
	}
	file := filepath.Join(dir, "payload")
	if err := os.WriteFile(file, payload, 0o600); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	script := "stty -echo -opost; touch " + ready + "; read x; cat " + file + "; printf END-OF-PAYLOAD; sleep 60"
	c := startSession(t, srv, "bytes", tmuxctl.Config{}, "sh", "-c", script)
	ctx := ctx10(t)
	out, err := c.Run(ctx, "display-message -p '#{pane_id}'")
	if err != nil {
		t.Fatal(err)
	}
	pane := c.Pane(out[0])
	waitFile(t, ready)
	pane.Take() // nothing is expected before the payload; drop it anyway
	if _, err := c.Run(ctx, tmuxctl.Command("send-keys", "-t", out[0], "Enter")); err != nil {
		t.Fatal(err)
	}
	var got []byte
	for !bytes.HasSuffix(got, []byte("END-OF-PAYLOAD")) {
		select {
		case <-pane.Ready():
			ch := pane.Take()
			if ch.Lost {
				t.Fatal("output lost")
			}
			got = append(got, ch.Data...)
		case <-ctx.Done():
			t.Fatalf("timed out after %d bytes", len(got))
		}
	}
	got = bytes.TrimSuffix(got, []byte("END-OF-PAYLOAD"))
	if !bytes.Equal(got, payload) {
		i := 0
		for i < len(got) && i < len(payload) && got[i] == payload[i] {
			i++
		}
		t.Fatalf("payload differs at byte %d (got %d bytes, want %d)", i, len(got), len(payload))
	}
}

// waitFile waits for a file that a pane's script creates.
func waitFile(t *testing.T, path string) {
	t.Helper()
	if !testenv.Until(10*time.Second, func() bool { _, err := os.Stat(path); return err == nil }) {
		t.Fatalf("%s did not appear", path)
	}
}

func TestServerKilledIsReported(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := startSession(t, srv, "k", tmuxctl.Config{}, "sleep", "60")
	out, err := c.Run(ctx10(t), "display-message -p '#{pid}'")
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(out[0])
	start := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("death of the tmux server was not reported")
	}
	t.Logf("server death reported after %v", time.Since(start))
	var ee *tmuxctl.ExitError
	if !errors.As(c.Err(), &ee) || ee.Closed {
		t.Fatalf("Err = %v, want an ExitError explaining the death", c.Err())
	}
	if _, err := c.Run(ctx10(t), "display-message -p x"); !errors.Is(err, tmuxctl.ErrClosed) {
		t.Fatalf("Run after death = %v, want ErrClosed", err)
	}
}

func TestSessionKilledEndsClient(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	srv.Must("new-session", "-d", "-s", "keep", "sleep", "60")
	c := startSession(t, srv, "gone", tmuxctl.Config{}, "sleep", "60")
	srv.Must("kill-session", "-t", "=gone")
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("client did not end when its session was killed")
	}
	var ee *tmuxctl.ExitError
	if !errors.As(c.Err(), &ee) || ee.NoExit {
		t.Fatalf("Err = %#v, want %%exit seen", c.Err())
	}
}

// TestStalledConsumerDoesNotBlockPane floods a pane while nobody takes its
// output: the program must still finish, and the consumer is told to reseed.
func TestStalledConsumerDoesNotBlockPane(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := startSession(t, srv, "flood", tmuxctl.Config{PaneBacklog: 64 << 10},
		"sh", "-c", "sleep 0.3; head -c 20000000 /dev/zero | tr '\\000' x")
	// Not taking anything; the session ends when the flood is done.
	select {
	case <-c.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("flooding program never finished: the reader blocked it")
	}
	var lost bool
	for pane := range map[string]bool{"%0": true} {
		ch := c.Pane(pane).Take()
		lost = ch.Lost
		// tmux may drop the last chunk when the pane closes; most arrived.
		if ch.Total <= 64<<10 {
			t.Errorf("pane %s received only %d bytes", pane, ch.Total)
		}
	}
	if !lost {
		t.Fatal("a consumer that fell behind the backlog bound was not told to reseed")
	}
}

func TestEventsAndFlowControl(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := startSession(t, srv, "ev", tmuxctl.Config{}, "sleep", "60")
	ctx := ctx10(t)
	if err := c.SetSize(ctx, 100, 30); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPauseAfter(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Continue(ctx, "%0"); err != nil {
		t.Fatal(err)
	}
	if err := c.Pause(ctx, "%0"); err != nil {
		t.Fatal(err)
	}
	if err := c.Continue(ctx, "%0"); err != nil {
		t.Fatal(err)
	}
	srv.Must("rename-window", "-t", "ev", "new name")
	srv.Must("resize-window", "-t", "ev", "-x", "90", "-y", "20")
	var sawRename, sawLayout bool
	for !(sawRename && sawLayout) {
		select {
		case ev := <-c.Events():
			switch e := ev.(type) {
			case tmuxctl.WindowEvent:
				if e.Name == "window-renamed" && len(e.Args) == 1 && e.Args[0] == "new name" {
					sawRename = true
				}
			case tmuxctl.LayoutChange:
				if len(e.Panes) == 1 && e.Panes[0].Width == 90 && e.Panes[0].Height == 20 {
					sawLayout = true
				}
			}
		case <-ctx.Done():
			t.Fatalf("events: rename %v layout %v", sawRename, sawLayout)
		}
	}
}

func TestHookBlockMidStream(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := startSession(t, srv, "h", tmuxctl.Config{}, "sleep", "60")
	ctx := ctx10(t)
	if _, err := c.Run(ctx, tmuxctl.Command("set-hook", "-g", "after-rename-window", "list-sessions -F 'hook-#{session_name}'")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		if _, err := c.Run(ctx, tmuxctl.Command("rename-window", "-t", "h", fmt.Sprint("w", i))); err != nil {
			t.Fatal(err)
		}
		out, err := c.Run(ctx, tmuxctl.Command("display-message", "-p", fmt.Sprint("x", i)))
		if err != nil || len(out) != 1 || out[0] != fmt.Sprint("x", i) {
			t.Fatalf("reply after hook block = %q, %v", out, err)
		}
	}
}

func TestOpenCloseLeavesNoClients(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	srv.Must("new-session", "-d", "-s", "oc", "sleep", "120")
	for i := 0; i < 100; i++ {
		c, err := tmuxctl.Start(ctx10(t), tmuxctl.Config{Socket: srv.Socket, Args: []string{"attach-session", "-t", "=oc"}})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := c.Run(ctx10(t), "display-message -p x"); err != nil {
				t.Fatal(err)
			}
		}
		c.Close()
	}
	if pids := tmuxtest.ControlClients(srv.Socket); len(pids) != 0 {
		t.Fatalf("tmux -C processes left after 100 open/close cycles: %v", pids)
	}
}

// TestProtocolLookalikesInPaneContent: a pane showing lines that look like
// protocol ("%end …", "%exit", "%begin …") comes back from capture-pane as
// content, and the client stays in step.
func TestProtocolLookalikesInPaneContent(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	ready := filepath.Join(t.TempDir(), "ready")
	c := startSession(t, srv, "look", tmuxctl.Config{}, "sh", "-c",
		"printf '%%end 1 2 1\\n%%exit\\n%%begin 1 2 1\\n%%error 9 9 1\\n'; touch "+ready+"; sleep 60")
	waitFile(t, ready)
	ctx := ctx10(t)
	// capture-pane until the lines are there (the printf may still be in flight).
	var out []string
	if !testenv.Until(10*time.Second, func() bool {
		var err error
		out, err = c.Run(ctx, "capture-pane -p -t '%0'")
		if err != nil {
			t.Fatal(err)
		}
		if len(out) >= 4 && out[0] == "%end 1 2 1" {
			return true
		}
		return false
	}) {
		t.Fatalf("capture = %q", out)
	}
	want := []string{"%end 1 2 1", "%exit", "%begin 1 2 1", "%error 9 9 1"}
	for i, w := range want {
		if out[i] != w {
			t.Fatalf("line %d = %q, want %q (all: %q)", i, out[i], w, out)
		}
	}
	if got, err := c.Run(ctx, "display-message -p still-in-step"); err != nil || got[0] != "still-in-step" {
		t.Fatalf("after lookalikes: %q %v", got, err)
	}
}
