package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/termsprawl/termsprawl/tools"
)

// The dialog picker (CONTRACT §18, "Answering from inside a node"): a
// human attached to any node presses the prefix, then tools.PickerKey; the
// private server runs `termsprawl pick` in a display-popup, which lists
// the pending dialogs oldest first and answers the chosen one. It is a
// plain line-oriented UI (numbers and letters, then Enter), so it works
// in any popup size and any terminal, and it talks to termsprawl like
// every other human command: the operator's session, through tools.Call.

type pickCmd struct{}

func (pickCmd) Examples() string {
	return `termsprawl pick                            # what C-b ` + tools.PickerKey + ` runs in a popup inside any node
1                                          # (in the picker) the first dialog; then a allow, d deny, w always, or a choice's number`
}

// pickerCommand is the shell command the private servers bind to prefix
// tools.PickerKey: this executable, on this state dir ("" if it cannot tell).
func (h *human) pickerCommand() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	// tmux runs it outside every node, for the human: as the operator.
	return shellJoin([]string{exe, "--state-dir", h.stateDir, "--operator", "pick"})
}

// errPickQuit ends the picker: the human typed q, or the input ended.
var errPickQuit = errors.New("quit")

// picker is one run of the picker.
type picker struct {
	h  *human
	in *bufio.Reader
	w  io.Writer
}

// ask prints prompt and returns the next input line, trimmed.
func (p *picker) ask(prompt string) (string, error) {
	fmt.Fprint(p.w, prompt)
	line, err := p.in.ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(p.w)
		return "", errPickQuit
	}
	return strings.TrimSpace(line), nil
}

// closeAfter waits for Enter (so the human reads msg before the popup
// closes) and returns code.
func (p *picker) closeAfter(code int) int {
	_, _ = p.ask("(Enter closes)")
	return code
}

// pick runs the picker on in until no dialog is pending or the human
// quits.
func (h *human) pick(in io.Reader) int {
	p := &picker{h: h, in: bufio.NewReader(in), w: h.stdout}
	// Errors of the calls go to the popup too, not to a stderr nobody sees.
	h.stderr = h.stdout
	answered := 0
	for {
		list, code := callAs[tools.DialogList](h, "dialog_list", map[string]any{})
		if code != ExitOK {
			return p.closeAfter(code)
		}
		if len(list.Dialogs) == 0 {
			if answered > 0 {
				return ExitOK // the last one is answered: the popup closes
			}
			fmt.Fprintln(p.w, "no pending dialogs: agents' permission prompts and questions show up here")
			return p.closeAfter(ExitOK)
		}
		d, err := p.choose(list.Dialogs)
		if err != nil {
			return ExitOK
		}
		if d == nil {
			continue
		}
		ok, err := p.answer(*d)
		if err != nil {
			return ExitOK
		}
		if ok {
			answered++
		}
	}
}

// choose lists the dialogs and returns the one picked (nil: list again).
func (p *picker) choose(ds []tools.Dialog) (*tools.Dialog, error) {
	fmt.Fprintf(p.w, "\npending dialogs, oldest first:\n")
	for i, d := range ds {
		what := d.Kind
		if len(d.Options) > 0 {
			what += " (" + strings.Join(d.Options, " | ") + ")"
		}
		title, _ := clipMiddle(strings.Join(strings.Fields(d.Title), " "), 70)
		fmt.Fprintf(p.w, "  %d) %s  %s  %s: %s\n", i+1, vis(d.ID), dash(d.Node), vis(what), title)
	}
	prompt := "answer which? [1-" + strconv.Itoa(len(ds)) + ", Enter: 1, q: close] "
	if len(ds) == 1 {
		prompt = "answer it? [Enter or 1, q: close] "
	}
	line, err := p.ask(prompt)
	if err != nil {
		return nil, err
	}
	switch line {
	case "q", "quit":
		return nil, errPickQuit
	case "":
		return &ds[0], nil
	}
	i, err := strconv.Atoi(line)
	if err != nil || i < 1 || i > len(ds) {
		fmt.Fprintf(p.w, "%q is not one of 1-%d\n", line, len(ds))
		return nil, nil
	}
	return &ds[i-1], nil
}

// answer asks how to answer d and answers it; false: not answered (back,
// or termsprawl said no).
func (p *picker) answer(d tools.Dialog) (bool, error) {
	fmt.Fprintf(p.w, "\n%s from %s (%s):\n  %s\n", vis(d.ID), dash(d.Node), vis(d.Kind), strings.ReplaceAll(tools.VisibleText(strings.TrimSpace(d.Title)), "\n", "\n  "))
	if d.Tool != "" || d.Input != "" {
		// The whole request, not the display title: what allow lets run
		// (and what "always" remembers) is this tool with this input.
		fmt.Fprintf(p.w, "  tool: %s\n  input, in full:\n    %s\n", dash(d.Tool), strings.ReplaceAll(fullInput(d.Input), "\n", "\n    "))
	}
	args := map[string]any{"dialog": d.ID}
	if len(d.Options) > 0 {
		for i, o := range d.Options {
			fmt.Fprintf(p.w, "  %d) %s\n", i+1, vis(o))
		}
		line, err := p.ask("choose [1-" + strconv.Itoa(len(d.Options)) + "], d deny, b back: ")
		if err != nil {
			return false, err
		}
		if i, err := strconv.Atoi(line); err == nil && i >= 1 && i <= len(d.Options) {
			args["mode"], args["selection"] = tools.AnswerAllow, d.Options[i-1]
			return p.send(d, args)
		}
		switch strings.ToLower(line) {
		case "d", "deny":
			return p.deny(d, args)
		case "", "b", "back":
			return false, nil
		}
		fmt.Fprintf(p.w, "%q is not a choice\n", line)
		return false, nil
	}
	line, err := p.ask("a allow, d deny (with a reason), w always (allow and remember for this node), b back: ")
	if err != nil {
		return false, err
	}
	switch strings.ToLower(line) {
	case "a", "allow", "y", "yes":
		args["mode"] = tools.AnswerAllow
	case "w", "always":
		args["mode"] = tools.AnswerAlways
	case "d", "deny", "n", "no":
		return p.deny(d, args)
	case "", "b", "back":
		return false, nil
	default:
		fmt.Fprintf(p.w, "%q is not one of a, d, w, b\n", line)
		return false, nil
	}
	return p.send(d, args)
}

// deny asks for a reason and denies d.
func (p *picker) deny(d tools.Dialog, args map[string]any) (bool, error) {
	reason, err := p.ask("reason, told to the agent (Enter: none): ")
	if err != nil {
		return false, err
	}
	args["mode"] = tools.AnswerDeny
	if reason != "" {
		args["reason"] = reason
	}
	return p.send(d, args)
}

// send answers d with args and says how.
func (p *picker) send(d tools.Dialog, args map[string]any) (bool, error) {
	args["surface"] = "picker"
	if _, code := p.h.call("dialog_answer", args); code != ExitOK {
		return false, nil // h.call printed why (to the popup)
	}
	how := args["mode"].(string)
	if sel, ok := args["selection"].(string); ok {
		how += ": " + sel
	}
	fmt.Fprintf(p.w, "answered %s (%s): %s\n", vis(d.ID), dash(d.Node), vis(how))
	return true, nil
}

// fullInput is a dialog's input as a human reads it: indented JSON, or
// the text as it is when it is not JSON; controls made visible either way
// (tools.VisibleText).
func fullInput(in string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(in), "", "  ") == nil {
		return tools.VisibleText(b.String())
	}
	return tools.VisibleText(in)
}
