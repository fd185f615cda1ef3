package dash

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"

	"github.com/termsprawl/termsprawl/tools"
)

// IsTerminal reports whether both stdin and stdout are terminals: only
// then does `termsprawl` with no arguments open the dashboard.
func IsTerminal() bool {
	return term.IsTerminal(os.Stdin.Fd()) && term.IsTerminal(os.Stdout.Fd())
}

// RunConfig is what Run needs besides the model's options.
type RunConfig struct {
	Session string // the operator's session file
	Options Options
	Input   io.Reader // nil: stdin
	Output  io.Writer // nil: stdout
}

// ErrNotRunning is Run's error when no orchestrator answers at start.
var ErrNotRunning = errors.New("termsprawl is not running")

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
	popts = append(popts, tea.WithContext(ctx))
	if cfg.Input != nil {
		popts = append(popts, tea.WithInput(cfg.Input))
	}
	if cfg.Output != nil {
		popts = append(popts, tea.WithOutput(cfg.Output))
	}
	_, err := tea.NewProgram(m, popts...).Run()
	if errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil {
		return nil
	}
	return err
}
