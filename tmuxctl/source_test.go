package tmuxctl_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/termsprawl/termsprawl/internal/tmuxtest"
	"github.com/termsprawl/termsprawl/tmuxctl"
)

// tenLineConf is like the orchestrator's server configuration: a comment
// and ten set-option lines. tmux 3.3a answers `source-file` over control
// mode with its own (empty) block and then one block per command of the
// file, all with flags 1, before it runs the next command.
const tenLineConf = `# ten commands, each with its own reply block
set -gw remain-on-exit on
set -g remain-on-exit-format ""
set -g history-limit 10000
set -g status off
set -g escape-time 10
set -g default-terminal screen-256color
set -g update-environment ""
set -g exit-empty on
set -g @tmuxctl-test one
set -g @tmuxctl-test-2 two
`

func writeConf(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSourceFileThenCommand sends source-file of a ten-line config and at
// once another command, 200 times, sequentially and pipelined from two
// goroutines: the second command must always get its own reply, never one
// of the config's blocks.
func TestSourceFileThenCommand(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := startSession(t, srv, "sf", tmuxctl.Config{}, "sleep", "60")
	ctx := ctx10(t)
	conf := writeConf(t, "ten.conf", tenLineConf)
	source := tmuxctl.Command("source-file", conf)
	list := tmuxctl.Command("list-sessions", "-F", "#{session_name} listed")
	check := func(i int, what string, out []string, err error) {
		t.Helper()
		if err != nil || len(out) != 1 || out[0] != "sf listed" {
			t.Fatalf("iteration %d (%s): list-sessions after source-file = %q, %v", i, what, out, err)
		}
	}
	for i := 0; i < 200; i++ {
		// Not pipelined: the next command is sent after source-file's reply.
		if out, err := c.Run(ctx, source); err != nil || len(out) != 0 {
			t.Fatalf("iteration %d: source-file = %q, %v", i, out, err)
		}
		out, err := c.Run(ctx, list)
		check(i, "sequential", out, err)

		// SourceFile, then at once the next command.
		if err := c.SourceFile(ctx, conf); err != nil {
			t.Fatalf("iteration %d: SourceFile: %v", i, err)
		}
		out, err = c.Run(ctx, list)
		check(i, "after SourceFile", out, err)

		// Pipelined: both in flight at once, in either order.
		var wg sync.WaitGroup
		var srcErr, listErr error
		var listOut []string
		wg.Add(2)
		go func() { defer wg.Done(); _, srcErr = c.Run(ctx, source) }()
		go func() { defer wg.Done(); listOut, listErr = c.Run(ctx, list) }()
		wg.Wait()
		if srcErr != nil {
			t.Fatalf("iteration %d: pipelined source-file: %v", i, srcErr)
		}
		check(i, "pipelined", listOut, listErr)

		// On one line: the config's blocks come between source-file's and
		// the next command's.
		outs, err := c.RunMany(ctx, list, source)
		if err != nil || len(outs) != 2 || len(outs[0]) != 1 || outs[0][0] != "sf listed" || len(outs[1]) != 0 {
			t.Fatalf("iteration %d: RunMany(list, source-file) = %q, %v", i, outs, err)
		}
		out, err = c.Run(ctx, list)
		check(i, "after RunMany", out, err)
	}
	out, err := c.Run(ctx, "show-options -gv @tmuxctl-test-2")
	if err != nil || len(out) != 1 || out[0] != "two" {
		t.Fatalf("config was not applied: %q, %v", out, err)
	}
}

// TestSourceFileErrors: SourceFile reports a missing file, a command of
// the file that fails at run time and one that does not parse, and the
// client stays in step after each.
func TestSourceFileErrors(t *testing.T) {
	srv := tmuxtest.New(t)
	c := startSession(t, srv, "se", tmuxctl.Config{}, "sleep", "60")
	ctx := ctx10(t)
	inStep := func(what string) {
		t.Helper()
		want := "in-step-" + what
		if out, err := c.Run(ctx, "display-message -p "+want); err != nil || len(out) != 1 || out[0] != want {
			t.Fatalf("after %s: %q, %v", what, out, err)
		}
	}
	var ce *tmuxctl.CommandError

	err := c.SourceFile(ctx, filepath.Join(t.TempDir(), "missing.conf"))
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "No such file") {
		t.Fatalf("missing file: %v", err)
	}
	inStep("missing")

	runtime := writeConf(t, "runtime.conf", "set -g status off\nset -g no-such-option 1\nset -g @after-error yes\n")
	err = c.SourceFile(ctx, runtime)
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "invalid option: no-such-option") {
		t.Fatalf("run-time error in config: %v", err)
	}
	inStep("runtime")
	// tmux goes on after a failing command of a config file.
	if out, err := c.Run(ctx, "show-options -gv @after-error"); err != nil || out[0] != "yes" {
		t.Fatalf("command after the failing one: %q, %v", out, err)
	}

	parse := writeConf(t, "parse.conf", "set -g status off\nno-such-command x\n")
	err = c.SourceFile(ctx, parse)
	if !errors.As(err, &ce) || !strings.Contains(ce.Message, "parse.conf:2: unknown command: no-such-command") {
		t.Fatalf("parse error in config: %v", err)
	}
	inStep("parse")

	// Run is the faithful call: source-file's own block succeeded.
	if out, err := c.Run(ctx, tmuxctl.Command("source-file", runtime)); err != nil || len(out) != 0 {
		t.Fatalf("Run(source-file) with a failing config command = %q, %v", out, err)
	}
	inStep("run")

	// A relative path is taken relative to the caller, not tmux.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rel.conf"), []byte("set -g @rel yes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if err := c.SourceFile(ctx, "rel.conf"); err != nil {
		t.Fatalf("relative path: %v", err)
	}
	inStep("relative")
}

// TestInsertingCommands: if-shell, run-shell -C and nested source-file also
// insert commands (with blocks of their own) after themselves; each Run
// still gets exactly its own reply, and a RunMany with such a command
// before the last is refused.
func TestInsertingCommands(t *testing.T) {
	t.Parallel()
	srv := tmuxtest.New(t)
	c := startSession(t, srv, "ins", tmuxctl.Config{}, "sleep", "60")
	ctx := ctx10(t)
	inner := writeConf(t, "inner.conf", "display-message -p inner-1\ndisplay-message -p inner-2\n")
	outer := writeConf(t, "outer.conf", fmt.Sprintf("source-file %s\ndisplay-message -p outer\n", inner))
	for i, cmd := range []string{
		tmuxctl.Command("if-shell", "true", "display-message -p if-inner"),
		tmuxctl.Command("if-shell", "-F", "1", "display-message -p if-F-inner ; display-message -p if-F-inner-2"),
		tmuxctl.Command("if", "-F", "0", "display-message -p nope", "display-message -p else-branch"),
		tmuxctl.Command("run-shell", "-C", "display-message -p run-C-inner"),
		tmuxctl.Command("source-file", outer),
		tmuxctl.Command("source", inner),
		tmuxctl.Command("sou", inner),
		"'source-file' " + tmuxctl.Quote(inner), // a quoted command name
	} {
		for j := 0; j < 20; j++ {
			if out, err := c.Run(ctx, cmd); err != nil || len(out) != 0 {
				t.Fatalf("Run(%q) = %q, %v", cmd, out, err)
			}
			want := fmt.Sprintf("own-%d-%d", i, j)
			if out, err := c.Run(ctx, "display-message -p "+want); err != nil || len(out) != 1 || out[0] != want {
				t.Fatalf("after %q: %q, %v", cmd, out, err)
			}
		}
	}
	if _, err := c.RunMany(ctx, tmuxctl.Command("source-file", inner), "display-message -p x"); !errors.Is(err, tmuxctl.ErrBadCommand) {
		t.Fatalf("RunMany with source-file before the last command = %v, want ErrBadCommand", err)
	}
	// A failing command before the inserting one stops the line; the
	// client stays in step.
	outs, err := c.RunMany(ctx, "display-message -p first", "kill-pane -t nosuch", tmuxctl.Command("source-file", inner))
	var ce *tmuxctl.CommandError
	if !errors.As(err, &ce) || ce.Index != 1 || len(outs) != 1 || outs[0][0] != "first" {
		t.Fatalf("RunMany stopped by an error = %q, %v", outs, err)
	}
	if out, err := c.Run(ctx, "display-message -p end"); err != nil || out[0] != "end" {
		t.Fatalf("after stopped RunMany: %q, %v", out, err)
	}
}
