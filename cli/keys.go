package cli

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// The human CLI presses keys (CONTRACT §18): press, type, paste and
// interrupt, beside send. Every mutation of the human CLI prints one
// sentence ("sent 10 bytes to build"), or the whole receipt with --json.

// moreCmds are commands of issue 21 in files of their own; humanGrammar
// embeds them.
type moreCmds struct {
	Press      pressCmd      `cmd:"" help:"Press keys or chords in a node: Enter, Escape, Up, C-c, M-x, F5 … (each KEY one chord)."`
	Type       typeCmd       `cmd:"" help:"Type text into a node as keystrokes, without pressing Enter."`
	Paste      pasteCmd      `cmd:"" help:"Paste text into a node (bracketed when its program asked for it), without Enter; - reads the text from stdin."`
	Interrupt  interruptCmd  `cmd:"" help:"Press Ctrl+C in a node."`
	Recordings recordingsCmd `cmd:"" help:"List the recordings in <state>/traces, newest first: node, start, duration, bytes, path."`
	Task       taskCmd       `cmd:"" help:"Send a task to an agent as the operator (agent_send) and print its id; --wait prints its reply."`
}

// jsonFlag is --json of the mutations: the receipt instead of a sentence.
type jsonFlag struct {
	JSON bool `name:"json" help:"Print the whole receipt as JSON instead of one line (give it before NODE)."`
}

type pressCmd struct {
	jsonFlag
	Node string   `arg:"" name:"NODE" predictor:"node" help:"Node: its id, else its name when unique, else a unique id prefix."`
	Keys []string `arg:"" name:"KEY" help:"Key names: Enter Escape Tab BSpace Space Up Down Left Right Home End PPage NPage IC DC F1…F12, a single character, with modifiers C- M- S- (C-c, M-x, S-Tab) or Control+ Alt+ Shift+."`
}

func (pressCmd) Examples() string {
	return `termsprawl press build C-c                  # Ctrl+C
termsprawl press vim Escape : w q Enter     # several chords in one go
termsprawl press --json build Up Enter      # the receipt as JSON`
}

type typeCmd struct {
	jsonFlag
	Node string   `arg:"" name:"NODE" predictor:"node" help:"Node: its id, else its name when unique, else a unique id prefix."`
	Text []string `arg:"" name:"TEXT" help:"Text to type: everything after NODE, flags included (several words are joined with spaces); no Enter."`
}

func (typeCmd) Examples() string {
	return `termsprawl type build 'git commit -m "wip"'  # typed, not run: press Enter to run it
termsprawl type build -- --version          # -- before text that looks like a flag`
}

type pasteCmd struct {
	jsonFlag
	Node string   `arg:"" name:"NODE" predictor:"node" help:"Node: its id, else its name when unique, else a unique id prefix."`
	Text []string `arg:"" name:"TEXT" help:"Text to paste (several words are joined with spaces), or - to read it from stdin; no Enter."`
}

func (pasteCmd) Examples() string {
	return `termsprawl paste build 'SELECT 1;'
termsprawl paste build - < query.sql        # the text from stdin`
}

type interruptCmd struct {
	jsonFlag
	nodeArg
}

func (interruptCmd) Examples() string { return "termsprawl interrupt build                  # Ctrl+C" }

// textCmds take everything after NODE as their text (sendArgs).
var textCmds = map[string]bool{"send": true, "type": true, "paste": true, "press": true}

// humanStdin is what `paste NODE -` reads (tests replace it).
var humanStdin io.Reader = os.Stdin

// runInputCmd runs the input commands; ok is false for other commands.
func (h *human) runInputCmd(cmd string, g *humanGrammar) (code int, ok bool) {
	switch cmd {
	case "send":
		text := strings.Join(g.Send.Text, " ")
		return h.input("terminal_submit", g.Send.Node, map[string]any{"text": text}, g.Send.JSON, func(r tools.InputResult) string {
			return fmt.Sprintf("sent %s and Enter to %s", byteCount(len(text)), r.Terminal)
		}), true
	case "type":
		text := strings.Join(g.Type.Text, " ")
		return h.input("terminal_type", g.Type.Node, map[string]any{"text": text}, g.Type.JSON, func(r tools.InputResult) string {
			return fmt.Sprintf("typed %s into %s (no Enter)", byteCount(len(text)), r.Terminal)
		}), true
	case "paste":
		text := strings.Join(g.Paste.Text, " ")
		if len(g.Paste.Text) == 1 && g.Paste.Text[0] == "-" {
			data, err := io.ReadAll(io.LimitReader(humanStdin, tools.MaxStringBytes+1))
			switch {
			case err != nil:
				return usageError(h.stderr, h.prefix(), fmt.Errorf("read stdin: %w", err), ""), true
			case len(data) == 0:
				return usageError(h.stderr, h.prefix(), errors.New("stdin is empty: nothing to paste (pipe the text in, e.g. termsprawl paste "+g.Paste.Node+" - < file, or give it as an argument)"), ""), true
			case len(data) > tools.MaxStringBytes:
				return usageError(h.stderr, h.prefix(), fmt.Errorf("stdin has more than %d bytes: paste at most %d at a time", tools.MaxStringBytes, tools.MaxStringBytes), ""), true
			}
			text = string(data)
		}
		if text == "" {
			return usageError(h.stderr, h.prefix(), errors.New("nothing to paste: give the text, or - to read it from stdin"), ""), true
		}
		return h.input("terminal_paste", g.Paste.Node, map[string]any{"text": text}, g.Paste.JSON, func(r tools.InputResult) string {
			return fmt.Sprintf("pasted %s into %s (no Enter)", byteCount(len(text)), r.Terminal)
		}), true
	case "press":
		spec := strings.Join(g.Press.Keys, " ")
		keys, err := tools.ParseKeys(spec)
		if err != nil {
			return usageError(h.stderr, h.prefix(), err, "example: termsprawl press "+g.Press.Node+" C-c"), true
		}
		return h.input("terminal_press", g.Press.Node, map[string]any{"keys": spec}, g.Press.JSON, func(r tools.InputResult) string {
			if len(r.Keys) > 0 {
				keys = r.Keys
			}
			return fmt.Sprintf("pressed %s in %s", strings.Join(keys, " "), r.Terminal)
		}), true
	case "interrupt":
		return h.input("terminal_interrupt", g.Interrupt.Node, map[string]any{}, g.Interrupt.JSON, func(r tools.InputResult) string {
			return fmt.Sprintf("pressed C-c in %s", r.Terminal)
		}), true
	}
	return 0, false
}

// input runs one input operation on node and prints line(result), or the
// receipt with asJSON.
func (h *human) input(op, node string, args map[string]any, asJSON bool, line func(tools.InputResult) string) int {
	args["terminal"] = node
	return mutate(h, op, args, asJSON, func(r tools.InputResult) {
		r.Terminal = cmp.Or(r.Terminal, node)
		fmt.Fprintln(h.stdout, line(r))
	})
}

// printReceipt writes a receipt as indented JSON.
func printReceipt(w io.Writer, v json.RawMessage) {
	var pretty any
	if json.Unmarshal(v, &pretty) != nil {
		fmt.Fprintf(w, "%s\n", v)
		return
	}
	_ = prettyJSON(w, pretty)
}

// byteCount is "1 byte" or "N bytes".
func byteCount(n int) string {
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// runMoreCmd runs the commands of issue 21 that live in their own files.
func (h *human) runMoreCmd(cmd string, g *humanGrammar) (int, bool) {
	switch cmd {
	case "recordings":
		return h.recordings(g.Recordings), true
	case "task":
		return h.task(g.Task), true
	}
	if code, ok := h.runWorktreeCmd(cmd, g); ok {
		return code, true
	}
	return h.runInputCmd(cmd, g)
}
