package dash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/termsprawl/termsprawl/probe"
	"github.com/termsprawl/termsprawl/tools"
)

// Profile is the colour profile of out (stdout when nil) from the
// environment alone. colorprofile.Detect runs `tmux info` when $TMUX is
// set; the dashboard spawns no tmux process (CONTRACT §19), so it is asked
// without $TMUX: inside tmux that is 256 colours (TERM tmux-256color or
// screen-256color), or true colour when COLORTERM says so and the outer
// TERM is not tmux's. NO_COLOR gives attributes only.
func Profile(out io.Writer, env []string) colorprofile.Profile {
	if out == nil {
		out = os.Stdout
	}
	return colorprofile.Detect(out, withoutTmux(env))
}

// withoutTmux is env less $TMUX: the terminal libraries ask `tmux info`
// when it is set (the program's environment is only theirs: attach's
// command has its own).
func withoutTmux(env []string) []string {
	clean := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "TMUX=") {
			clean = append(clean, kv)
		}
	}
	return clean
}

// RunConfig is what Run needs besides the model's options.
type RunConfig struct {
	Session string // the operator's session file
	Options Options
	Input   io.Reader // nil: stdin
	Output  io.Writer // nil: stdout
}

// ErrNotRunning is Run's error when no orchestrator answers at start.
var ErrNotRunning = tools.ErrNotRunning

// Run subscribes to the event stream with cfg.Session, waits for the
// first frame (so a dashboard never opens on nothing: not running is
// ErrNotRunning, a refused token its error), then runs the program until
// the human quits.
func Run(ctx context.Context, cfg RunConfig) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ev := tools.Subscribe(ctx, cfg.Session, "", tools.EventsOptions{})
	defer ev.Close()
	// The first event says whether termsprawl is there.
	var first tools.StreamEvent
	select {
	case e, ok := <-ev.C():
		if !ok {
			return ctx.Err()
		}
		first = e
	case <-ctx.Done():
		return ctx.Err()
	}
	if first.Down {
		if first.NotRunning {
			return ErrNotRunning
		}
		return fmt.Errorf("the event stream: %w", first.Err)
	}
	opts := cfg.Options
	events := make(chan tools.StreamEvent, 64)
	go func() {
		defer close(events)
		events <- first
		for e := range ev.C() {
			select {
			case events <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	opts.Events, opts.Show = events, ev.Show
	m := New(ctx, opts)
	var popts []tea.ProgramOption
	env := withoutTmux(os.Environ())
	// 120 frames a second at most (Bubble Tea's default is 60): a key's
	// frame waits at most 8 ms for the renderer's tick, which keeps the
	// end-to-end p99 under 50 ms; idle it costs 2–3.5 % of a core instead
	// of 1.4–1.8 % (docs/PERFORMANCE.md).
	popts = append(popts, tea.WithContext(ctx), tea.WithEnvironment(env), tea.WithColorProfile(Profile(cfg.Output, env)), tea.WithFPS(120))
	if cfg.Input != nil {
		popts = append(popts, tea.WithInput(cfg.Input))
	}
	if cfg.Output != nil {
		popts = append(popts, tea.WithOutput(cfg.Output))
	}
	// Its own semantic tree, when it runs in a node ($TERMSPRAWL_SESSION_FILE;
	// elsewhere the publisher does nothing).
	pub := probe.New(probe.Options{})
	defer pub.Close()
	_, err := tea.NewProgram(probe.Wrap(m, pub, func(tm tea.Model) *probe.Node { return treeOf(tm) }), popts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}
